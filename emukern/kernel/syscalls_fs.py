"""Descriptor syscalls beyond read/write: what a C library's start-up and stdio use
(writev, fstat, ioctl(TCGETS), lseek, dup, fcntl, readlinkat("/proc/self/exe"))."""
from __future__ import annotations

from typing import Any

from emukern.kernel import errno as E
from emukern.kernel.files import OutputFile, PipeEnd, StdinFile, SysctlFile

U64 = (1 << 64) - 1
ENOTTY = 25
AT_EMPTY_PATH = 0x1000
S_IFCHR, S_IFIFO, S_IFREG = 0o020000, 0o010000, 0o100000
F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_SETFL, F_DUPFD_CLOEXEC = 0, 1, 2, 3, 4, 1030


def _stat_bytes(mode: int, size: int = 0, rdev: int = 0, ino: int = 1) -> bytes:
    """asm-generic struct stat (riscv64 and arm64): 128 bytes."""
    le = lambda v, n: (v & ((1 << (8 * n)) - 1)).to_bytes(n, "little")  # noqa: E731
    return (le(0x0E, 8) + le(ino, 8) + le(mode, 4) + le(1, 4) + le(0, 4) + le(0, 4) + le(rdev, 8)
            + le(0, 8) + le(size, 8) + le(4096, 4) + le(0, 4) + le((size + 511) // 512, 8)
            + bytes(48) + bytes(8))


class FileSyscallsMixin:
    cost: Any

    def _vec(self, task, iov: int, iovcnt: int) -> list[tuple[int, int]] | int:
        if iovcnt < 0 or iovcnt > 1024:
            return -E.EINVAL
        raw = task.mm.read(iov, 16 * iovcnt)
        return [(int.from_bytes(raw[16 * i: 16 * i + 8], "little"),
                 int.from_bytes(raw[16 * i + 8: 16 * i + 16], "little")) for i in range(iovcnt)]

    def sys_writev(self, cpu, task, fd, iov, iovcnt, *a):
        vec = self._vec(task, iov, iovcnt)
        if isinstance(vec, int):
            return vec
        total = 0
        for base, length in vec:
            if not length:
                continue
            r = self.sys_write(cpu, task, fd, base, length)      # type: ignore[attr-defined]
            if not isinstance(r, int) or r < 0:
                return r if total == 0 else total
            total += r
            if r < length:
                break
        return total

    def sys_readv(self, cpu, task, fd, iov, iovcnt, *a):
        vec = self._vec(task, iov, iovcnt)
        if isinstance(vec, int):
            return vec
        for base, length in vec:              # like a pipe read: fill the first non-empty buffer
            if length:
                return self.sys_read(cpu, task, fd, base, length)  # type: ignore[attr-defined]
        return 0

    def _fstat_file(self, f: Any) -> bytes:
        if isinstance(f, (OutputFile, StdinFile)):
            return _stat_bytes(S_IFCHR | 0o620, rdev=(136 << 8))   # a pts-like character device
        if isinstance(f, PipeEnd):
            return _stat_bytes(S_IFIFO | 0o600, ino=f.pipe.ino)
        if isinstance(f, SysctlFile):
            return _stat_bytes(S_IFREG | f.entry.mode)
        return _stat_bytes(S_IFREG | 0o644)

    def sys_fstat(self, cpu, task, fd, statbuf, *a):
        f = task.files.get(fd if fd < 1 << 63 else fd - (1 << 64))
        if f is None:
            return -E.EBADF
        task.mm.write(statbuf, self._fstat_file(f))
        cpu.charge(self.cost.syscall_body)
        return 0

    def sys_newfstatat(self, cpu, task, dirfd, path_ptr, statbuf, flags, *a):
        path = task.mm.read_cstr(path_ptr).decode("utf-8", "replace") if path_ptr else ""
        if path == "" and flags & AT_EMPTY_PATH:
            return self.sys_fstat(cpu, task, dirfd, statbuf)
        entry = self.sysctl.lookup_path(path)      # type: ignore[attr-defined]
        if entry is None:
            return -E.ENOENT
        task.mm.write(statbuf, _stat_bytes(S_IFREG | entry.mode))
        return 0

    def sys_ioctl(self, cpu, task, fd, request, arg, *a):
        f = task.files.get(fd if fd < 1 << 63 else fd - (1 << 64))
        if f is None:
            return -E.EBADF
        return -ENOTTY         # no terminals in emukern: stdio is not a tty (full buffering)

    def sys_lseek(self, cpu, task, fd, offset, whence, *a):
        f = task.files.get(fd if fd < 1 << 63 else fd - (1 << 64))
        if f is None:
            return -E.EBADF
        whence &= 0xFFFFFFFF            # an unsigned int in Linux
        if whence > 4:
            return -E.EINVAL            # ksys_lseek: whence past SEEK_MAX, whatever the file
        if isinstance(f, SysctlFile):
            from emukern.kernel.sysctl import default_llseek
            pos = default_llseek(f.pos, 0, offset - (1 << 64) if offset >> 63 else offset, whence)
            if pos >= 0:
                f.pos = pos
            return pos
        return -E.ESPIPE                # pipes and terminals: no_llseek

    def _dup(self, task, oldfd: int, newfd: int | None, lowest: int = 0) -> int:
        f = task.files.get(oldfd if oldfd < 1 << 63 else oldfd - (1 << 64))
        if f is None:
            return -E.EBADF
        if newfd is None:
            return task.files.install(f, lowest)
        if newfd >= task.files.MAX_FDS:
            return -E.EBADF
        if newfd in task.files.fds:
            task.files.close(newfd)
        task.files.fds[newfd] = f
        f.refs += 1
        return newfd

    def sys_dup(self, cpu, task, oldfd, *a):
        return self._dup(task, oldfd, None)

    def sys_dup3(self, cpu, task, oldfd, newfd, flags, *a):
        if oldfd == newfd or flags & ~0x80000:
            return -E.EINVAL
        return self._dup(task, oldfd, newfd)

    def sys_fcntl(self, cpu, task, fd, cmd, arg, *a):
        f = task.files.get(fd if fd < 1 << 63 else fd - (1 << 64))
        if f is None:
            return -E.EBADF
        if cmd in (F_DUPFD, F_DUPFD_CLOEXEC):
            return self._dup(task, fd, None, lowest=arg)
        if cmd in (F_GETFD, F_SETFD, F_SETFL):
            return 0
        if cmd == F_GETFL:
            return 2 if f.readable and f.writable else (1 if f.writable else 0)
        return -E.EINVAL

    def sys_readlinkat(self, cpu, task, dirfd, path_ptr, buf, size, *a):
        path = task.mm.read_cstr(path_ptr).decode("utf-8", "replace")
        if path != "/proc/self/exe":
            return -E.ENOENT
        exe = (getattr(task, "exe", None) or "/" + task.comm).encode()[: max(0, size)]
        task.mm.write(buf, exe)
        return len(exe)
