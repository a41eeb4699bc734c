"""Open files of the guest file system (Linux ``struct file`` with its ``file_operations``).

Every class answers the same small set of operations the syscalls call — read/pread, write/
pwrite, llseek, getdents — and returns bytes or a count, or a negative errno.  Offsets are the
file's own (shared by every descriptor that dup/fork made from one open, as in Linux).
"""
from __future__ import annotations

import hashlib
import heapq
import os
import struct
from typing import Any

from emukern.kernel import errno as E
from emukern.kernel.files import File, OutputFile
from emukern.kernel.fs import EOVERFLOW
from emukern.kernel.fs.vfs import DT_OF_MODE, S_IFDIR, Node

O_ACCMODE, O_WRONLY, O_RDWR, O_APPEND = 3, 1, 2, 0x400
SEEK_SET, SEEK_CUR, SEEK_END = 0, 1, 2
MAX_IO = 1 << 24          # bytes one read moves at most (a short read, as rw_verify_area allows)
MAX_OFF = (1 << 63) - 1


class VfsFile(File):
    """A file opened by path: ``node`` is what it names, ``flags`` the open flags."""

    kind = "file"

    def __init__(self, node: Node, flags: int) -> None:
        super().__init__()
        self.node = node
        self.flags = flags
        acc = flags & O_ACCMODE
        self.readable = acc != O_WRONLY
        self.writable = acc in (O_WRONLY, O_RDWR)
        self.pos = 0

    # the defaults: a file that holds nothing
    def size(self) -> int:
        return 0

    def pread(self, count: int, off: int) -> bytes | int:
        return b""

    def pwrite(self, data: bytes, off: int) -> int:
        return -E.EINVAL

    def read(self, count: int) -> bytes | int:
        data = self.pread(count, self.pos)
        if isinstance(data, bytes):
            self.pos += len(data)
        return data

    def write(self, data: bytes) -> int:
        off = self.size() if self.flags & O_APPEND else self.pos
        n = self.pwrite(data, off)
        if n >= 0:
            self.pos = off + n
        return n

    def llseek(self, offset: int, whence: int) -> int:
        """generic_file_llseek: SEEK_SET/CUR/END; a negative result is -EINVAL."""
        if whence == SEEK_SET:
            new = offset
        elif whence == SEEK_CUR:
            new = self.pos + offset
        elif whence == SEEK_END:
            new = self.size() + offset
        else:
            return -E.EINVAL
        if new < 0:
            return -E.EINVAL
        if new > MAX_OFF:
            return -EOVERFLOW
        self.pos = new
        return new

    def getdents(self, bufsize: int) -> bytes | int:
        return -E.ENOTDIR


def write_kernel_bytes(f: File, data: bytes, off: int | None) -> int | None:
    """Bytes the kernel already holds, written to a terminal/log (OutputFile, mirrored to its
    echo stream) or a file opened by path (at ``off``, or at its position): the write side both
    write(2) and sendfile's splice end in.  None for any other kind of file."""
    if isinstance(f, OutputFile):
        f.sink += data
        if f.echo is not None:
            f.echo.write(data)
            f.echo.flush()
        return len(data)
    if isinstance(f, VfsFile):
        return f.write(data) if off is None else f.pwrite(data, off)
    return None


class HostFile(VfsFile):
    """A regular file of the root directory, read (and, with --root-rw, written) on the host."""

    def __init__(self, node: Node, flags: int, fd: int) -> None:
        super().__init__(node, flags)
        self.fd = fd

    def size(self) -> int:
        try:
            return os.fstat(self.fd).st_size
        except OSError:
            return 0

    def pread(self, count: int, off: int) -> bytes | int:
        try:
            return os.pread(self.fd, min(count, MAX_IO), off)
        except OSError as e:
            return -(e.errno or E.EIO)

    def pwrite(self, data: bytes, off: int) -> int:
        try:
            return os.pwrite(self.fd, data, off)
        except OSError as e:
            return -(e.errno or E.EIO)

    def truncate(self, length: int) -> int:
        try:
            os.ftruncate(self.fd, length)
            return 0
        except OSError as e:
            return -(e.errno or E.EIO)

    def on_close(self) -> list[Any]:
        self._release()
        return list(getattr(self, "close_wqs", ()))    # flock waiters (fs/meta.py)

    def _release(self) -> None:
        if self.fd >= 0:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = -1

    def __del__(self) -> None:
        # a run that ends with the file still open (the machine stopped its tasks) must not leak
        # the host descriptor
        self._release()


class MemFile(VfsFile):
    """A synthetic file whose bytes are made at open (seq_file-like /proc files)."""

    def __init__(self, node: Node, flags: int, data: bytes) -> None:
        super().__init__(node, flags)
        self.data = data

    def size(self) -> int:
        return len(self.data)

    def pread(self, count: int, off: int) -> bytes | int:
        return self.data[off: off + min(count, MAX_IO)]

    def llseek(self, offset: int, whence: int) -> int:
        if whence == SEEK_END:
            return super().llseek(len(self.data) + offset, SEEK_SET)
        return super().llseek(offset, whence)


class DevNull(VfsFile):
    """/dev/null: reads are end-of-file, writes vanish (drivers/char/mem.c read_null/write_null)."""

    def pwrite(self, data: bytes, off: int) -> int:
        return len(data)

    def llseek(self, offset: int, whence: int) -> int:
        self.pos = 0
        return 0                     # null_lseek


class DevZero(DevNull):
    """/dev/zero: as many zero bytes as asked (at most MAX_IO per call: a short read)."""

    def pread(self, count: int, off: int) -> bytes | int:
        return bytes(min(count, MAX_IO))


class DevRandom(DevNull):
    """/dev/urandom and /dev/random: a deterministic stream (SHAKE-256 of a fixed seed), so two
    runs read the same bytes.  One stream per machine, consumed in read order."""

    def __init__(self, node: Node, flags: int, stream: "RandomStream") -> None:
        super().__init__(node, flags)
        self.stream = stream

    def pread(self, count: int, off: int) -> bytes | int:
        return self.stream.take(min(count, 1 << 20))


class RandomStream:
    def __init__(self, seed: bytes = b"emukern /dev/urandom") -> None:
        self.seed = seed
        self.pos = 0

    def take(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            block = self.pos // 4096
            chunk = hashlib.shake_256(self.seed + block.to_bytes(8, "little")).digest(4096)
            lo = self.pos % 4096
            piece = chunk[lo: lo + n - len(out)]
            out += piece
            self.pos += len(piece)
        return bytes(out)


class DirFile(VfsFile):
    """An open directory: getdents64 gives ``.`` and ``..`` first, then the entries sorted by
    name (so the same root gives the same bytes), read from the directory as it goes.

    Nothing per entry is kept between calls (a guest may open a huge directory many times):
    the file holds its position (``pos``: the index of the next entry, which d_off, telldir
    and seekdir carry) and the last name it gave.  Each call reads the directory again and keeps
    only the next window of names after that one (``heapq.nsmallest``, at most what the buffer
    can hold), so host memory per open directory is constant and per call bounded by the
    caller's buffer.  After an lseek to another position the window is found by rank.  Entries
    added or removed between calls show up or not as they sort (Linux's readdir makes no promise
    about those either)."""

    MIN_RECLEN = 24              # a linux_dirent64 with a one-byte name

    def __init__(self, node: Node, flags: int, vfs: Any, parent: Node) -> None:
        super().__init__(node, flags)
        self.vfs = vfs
        self.parent = parent
        self.last: str | None = None      # the name at index pos-1, when pos > 2 and known

    def pread(self, count: int, off: int) -> bytes | int:
        return -E.EISDIR

    def llseek(self, offset: int, whence: int) -> int:
        if whence != SEEK_SET or offset < 0:
            return -E.EINVAL
        if offset != self.pos:
            self.last = None
        self.pos = offset
        return offset

    def _window(self, want: int) -> list[str]:
        """The sorted names at index pos.. (at most ``want`` of them)."""
        names = self.vfs.dir_names(self.node)
        if self.pos <= 2:
            return heapq.nsmallest(want, names)
        if self.last is not None:
            last = self.last
            return heapq.nsmallest(want, (n for n in names if n > last))
        skip = self.pos - 2                # after a seek: find the window by rank
        return heapq.nsmallest(skip + want, names)[skip:]

    def getdents(self, bufsize: int) -> bytes | int:
        """struct linux_dirent64 records: d_ino, d_off, d_reclen, d_type, d_name (8-aligned)."""
        out = bytearray()
        want = bufsize // self.MIN_RECLEN + 1
        todo: list[tuple[str, Node]] = []
        if self.pos == 0:
            todo.append((".", self.node))
        if self.pos <= 1:
            todo.append(("..", self.parent))
        window = self._window(want)
        for name in window:
            child = self.vfs.child(self.node, name)
            if child is not None:          # (gone since it was listed)
                todo.append((name, child))
        for name, node in todo:
            nb = name.encode("utf-8", "surrogateescape") + b"\0"
            reclen = (19 + len(nb) + 7) & ~7
            if len(out) + reclen > bufsize:
                if not out:
                    return -E.EINVAL          # buffer too small for one entry
                break
            rec = struct.pack("<QqHB", node.ino, self.pos + 1, reclen, DT_OF_MODE.get(node.kind, 0)) + nb
            out += rec.ljust(reclen, b"\0")
            self.pos += 1
            if name not in (".", "..") or self.pos > 2:
                self.last = name
        return bytes(out)


def stat_fields(node: Node, size: int | None = None) -> dict[str, int]:
    """The values fstat/statx report for ``node`` but its times: all from the model (no host
    inode numbers or owners), so runs with the same root give the same bytes.  The times are
    fs/meta.py's apply_meta's (the host file's, the overlay's or the boot time)."""
    return {"dev": node.dev, "ino": node.ino, "mode": node.mode,
            "nlink": 2 if node.kind == S_IFDIR else 1, "uid": 0, "gid": 0, "rdev": node.rdev,
            "size": node.size if size is None else size, "blksize": 4096}


def stat_bytes(f: dict[str, int]) -> bytes:
    """asm-generic struct stat (arm64 and riscv64): 128 bytes."""
    size = f["size"]
    return struct.pack("<QQIIIIQQqiiqqQqQqQII", f["dev"], f["ino"], f["mode"], f["nlink"], f["uid"],
                       f["gid"], f["rdev"], 0, size, f["blksize"], 0, (size + 511) // 512,
                       *f.get("atime", (0, 0)), *f.get("mtime", (0, 0)), *f.get("ctime", (0, 0)), 0, 0)


STAT_TIMES_OFFSET = 72       # st_atime..st_ctime_nsec in the asm-generic struct stat


def stat_with_times(raw: bytes, f: dict) -> bytes:
    """A packed struct stat with its three times replaced by ``f``'s atime/mtime/ctime."""
    t = struct.pack("<qQqQqQ", *f["atime"], *f["mtime"], *f["ctime"])
    return raw[:STAT_TIMES_OFFSET] + t + raw[STAT_TIMES_OFFSET + len(t):]


STATX_BASIC_STATS = 0x7FF


def statx_bytes(f: dict[str, int]) -> bytes:
    """struct statx (include/uapi/linux/stat.h): 256 bytes, every basic field filled."""
    size = f["size"]
    head = struct.pack("<IIQIIIHH", STATX_BASIC_STATS, f["blksize"], 0, f["nlink"], f["uid"], f["gid"],
                       f["mode"], 0)
    head += struct.pack("<QQQQ", f["ino"], size, (size + 511) // 512, 0)
    for t in (f.get("atime", (0, 0)), (0, 0), f.get("ctime", (0, 0)), f.get("mtime", (0, 0))):
        head += struct.pack("<qIi", t[0], t[1], 0)           # atime, btime (0), ctime, mtime
    head += struct.pack("<IIII", f["rdev"] >> 8, f["rdev"] & 0xFF, f["dev"] >> 8, f["dev"] & 0xFF)
    return head.ljust(256, b"\0")
