"""Open files of the guest file system (Linux ``struct file`` with its ``file_operations``).

Every class answers the same small set of operations the syscalls call — read/pread, write/
pwrite, llseek, getdents — and returns bytes or a count, or a negative errno.  Offsets are the
file's own (shared by every descriptor that dup/fork made from one open, as in Linux).
"""
from __future__ import annotations

import ctypes
import hashlib
import heapq
import mmap
import os
import struct
import weakref
from typing import Any

from emukern.kernel import errno as E
from emukern.kernel.files import File, OutputFile
from emukern.kernel.fs import EOVERFLOW
from emukern.kernel.fs.vfs import DT_OF_MODE, S_IFDIR, Node
from emukern.machine.memory import set_access_limit, set_uncharged

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


# ---- MAP_SHARED of a root file: host mappings of the file itself ------------------------------
# A shared mapping of a regular file of the root is a host MAP_SHARED mapping of the host file
# the guest opened, so the guest's stores land in the host's page cache: read()/write() of the
# file, and every other shared mapping of it (in this process, in a forked one, or mapped again
# later) see the same pages at once, as on Linux.
#
# The host must never touch a page of such a mapping that lies wholly past the end of the file:
# that raises SIGBUS in emukern itself.  So each mapping is one host buffer of the mapping's full
# length whose pages past the file's last page are private anonymous zero pages, and only the
# file's own pages are the file's (``SharedFileView.valid``).  Whenever emukern itself changes a
# mapped file's size (ftruncate, truncate, a write that extends it, O_TRUNC), every mapping of
# that file is brought up to date in place, at the same host addresses (the engines hold raw
# pointers): pages the file now covers become the file's, pages it lost become zero pages.
# The CPUs map those zero pages with no access (machine/memory.py's ``set_access_limit``), so
# the guest's load or store there faults and the page-fault handler raises SIGBUS (BUS_ADRERR),
# as Linux's filemap_fault does past i_size; the kernel's own copies read zeros there.

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                       ctypes.c_long)
_MAP_FIXED = 0x10
_PAGE = 4096
_RW = mmap.PROT_READ | mmap.PROT_WRITE


class SharedFileView:
    """What the kernel keeps about one host mapping of a root file: the file (its own host
    descriptor, so the guest may close its one), the file offset the mapping starts at, and how
    many bytes from the start are the file's pages."""

    __slots__ = ("fd", "key", "file_off", "length", "valid", "maywrite")

    def __init__(self, fd: int, key: tuple[int, int], file_off: int, length: int, maywrite: bool) -> None:
        self.fd = fd
        self.key = key
        self.file_off = file_off
        self.length = length
        self.valid = 0
        # a mapping of a writable open file may be (or become, by mprotect) writable: the host
        # maps it shared read-write.  One of a read-only open is a private read-only view of
        # the file's pages (it still sees every write to them), so a forced kernel store can
        # never reach the file
        self.maywrite = maywrite

    def fit(self, buf: mmap.mmap, size: int) -> None:
        """Make the pages of ``buf`` that lie before the end of a file of ``size`` bytes the
        file's, and the others zero pages."""
        want = max(0, min(self.length, (size + _PAGE - 1) // _PAGE * _PAGE - self.file_off))
        if want == self.valid or buf.closed:
            return
        base = ctypes.addressof(ctypes.c_char.from_buffer(buf))
        if want > self.valid:
            got = _libc.mmap(base + self.valid, want - self.valid, _RW,
                             (mmap.MAP_SHARED if self.maywrite else mmap.MAP_PRIVATE) | _MAP_FIXED,
                             self.fd, self.file_off + self.valid)
        else:
            got = _libc.mmap(base + want, self.valid - want, _RW,
                             mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_FIXED, -1, 0)
        if got == ctypes.c_void_p(-1).value:
            # the host refused: the pages keep what they were; never leave a page mapped past
            # the file's end (a smaller ``want`` above cannot fail but for lack of memory)
            raise OSError(ctypes.get_errno(), "mmap of a shared file view")
        self.valid = want
        # the guest's accesses past the file's last page fault (SIGBUS, see past_eof)
        set_access_limit(buf, want)

    def past_eof(self, buf_off: int) -> bool:
        """Is byte ``buf_off`` of the mapping in a page wholly past the file's end?"""
        return buf_off >= self.valid


# the host mappings of each host file (st_dev, st_ino), and what each one is
_FILE_VIEWS: "dict[tuple[int, int], weakref.WeakSet[mmap.mmap]]" = {}
_VIEW_OF: "weakref.WeakKeyDictionary[mmap.mmap, SharedFileView]" = weakref.WeakKeyDictionary()


def file_view(buf: Any) -> SharedFileView | None:
    """The shared file view ``buf`` is, or None (anonymous memory, a copy, shmem)."""
    return _VIEW_OF.get(buf) if _VIEW_OF else None


def _close_quietly(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def new_file_view(fd: int, file_off: int, length: int, maywrite: bool) -> mmap.mmap:
    """A host buffer of ``length`` bytes mapping the file open as host descriptor ``fd`` from
    ``file_off`` (pages past its end are zero pages): OSError when the host refuses."""
    st = os.fstat(fd)
    buf = mmap.mmap(-1, length, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    own = os.dup(fd)
    weakref.finalize(buf, _close_quietly, own)
    view = SharedFileView(own, (st.st_dev, st.st_ino), file_off, length, maywrite)
    try:
        view.fit(buf, st.st_size)
    except OSError:
        buf.close()
        raise
    _VIEW_OF[buf] = view
    _FILE_VIEWS.setdefault(view.key, weakref.WeakSet()).add(buf)
    set_uncharged(buf)          # the file's pages: not the machine's guest memory
    return buf


def view_again(buf: mmap.mmap, offset: int, length: int) -> mmap.mmap | None:
    """Another host mapping of the file ``buf`` maps, starting ``offset`` bytes into ``buf``
    and ``length`` long (mremap growing a shared file mapping), or None when ``buf`` is no file
    view or the host refuses."""
    view = file_view(buf)
    if view is None:
        return None
    try:
        return new_file_view(view.fd, view.file_off + offset, length, view.maywrite)
    except OSError:
        return None


def file_size_changed(fd: int) -> None:
    """The host file open as ``fd`` may have changed size: every mapping of it follows."""
    if not _FILE_VIEWS:
        return
    try:
        st = os.fstat(fd)
    except OSError:
        return
    views = _FILE_VIEWS.get((st.st_dev, st.st_ino))
    if not views:
        return
    for buf in list(views):
        view = _VIEW_OF.get(buf)
        if view is not None:
            try:
                view.fit(buf, st.st_size)
            except OSError:
                # the host would not map the file's new pages: they stay zero pages the guest
                # cannot touch (a shrink only maps anonymous pages, which fails only when the
                # host is out of memory altogether)
                pass


ENOSPC = 28


class HostFile(VfsFile):
    """A regular file of the root directory, read (and, with --root-rw, written) on the host."""

    def __init__(self, node: Node, flags: int, fd: int) -> None:
        super().__init__(node, flags)
        self.fd = fd
        if flags & 0o1000 and self.writable and fd >= 0:     # O_TRUNC emptied a mapped file?
            file_size_changed(fd)

    def shared_view(self, off: int, length: int) -> mmap.mmap:
        """A MAP_SHARED mapping of [off, off+length) of this file (OSError: the host refused)."""
        return new_file_view(self.fd, off, length, self.writable)

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
        fsm = self.node.extra.get("fsmount")
        if fsm is not None and fsm.size:
            data = fsm.fit_write(self.size(), data, off)
            if not data:
                return -ENOSPC                  # tmpfs size=: no page left for this write
        try:
            n = os.pwrite(self.fd, data, off)
        except OSError as e:
            return -(e.errno or E.EIO)
        if _FILE_VIEWS:
            file_size_changed(self.fd)          # a write past the end grows mapped pages
        return n

    def truncate(self, length: int) -> int:
        try:
            os.ftruncate(self.fd, length)
        except OSError as e:
            return -(e.errno or E.EIO)
        file_size_changed(self.fd)
        return 0

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
