"""File-system and descriptor syscalls beyond read/write: path lookups in the guest root
(openat, newfstatat, statx, faccessat, readlinkat, getdents64, getcwd/chdir/fchdir, mkdirat,
unlinkat), what a C library's start-up and stdio use (writev, fstat, ioctl(TCGETS), lseek,
pread64, dup, fcntl), and the file-backed side of mmap.  Paths resolve only inside the guest root
(emukern.kernel.fs.vfs); the root is read-only (EROFS) unless the machine was given --root-rw."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, cast

from emukern.kernel.mm.uaccess import copy_from_user, copy_to_user
from emukern.kernel import errno as E
from emukern.kernel import preempt as P
from emukern.kernel.files import OutputFile, PipeEnd, StdinFile, SysctlFile
from emukern.kernel.fs import ELOOP, ENAMETOOLONG, EROFS, EXDEV, PATH_MAX
from emukern.kernel.fs.file import (DirFile, HostFile, VfsFile, stat_bytes, stat_fields,
                                    statx_bytes)
from emukern.kernel.fs.procfs import ProcFs
from emukern.kernel.fs.vfs import Node, Vfs, copy_fs, cwd_of, fs_of

from emukern.machine.memory import SHARED_ANON

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

U64 = (1 << 64) - 1
ENOTTY = 25
AT_EMPTY_PATH = 0x1000
S_IFCHR, S_IFIFO, S_IFREG = 0o020000, 0o010000, 0o100000
F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_SETFL, F_DUPFD_CLOEXEC = 0, 1, 2, 3, 4, 1030
FD_CLOEXEC = 1
AT_FDCWD = -100
AT_SYMLINK_NOFOLLOW, AT_REMOVEDIR, AT_EACCESS, AT_SYMLINK_FOLLOW = 0x100, 0x200, 0x200, 0x400
RENAME_NOREPLACE, RENAME_EXCHANGE, RENAME_WHITEOUT = 1, 2, 4
O_ACCMODE, O_WRONLY, O_RDWR = 3, 1, 2
O_CREAT, O_EXCL, O_TRUNC, O_APPEND, O_CLOEXEC, O_PATH = 0o100, 0o200, 0o1000, 0o2000, 0o2000000, 0o10000000
# O_DIRECTORY / O_NOFOLLOW differ: arm64 has its own uapi fcntl.h, riscv64 uses asm-generic's
O_DIRECTORY = {"arm64": 0o40000, "riscv64": 0o200000}
O_NOFOLLOW = {"arm64": 0o100000, "riscv64": 0o400000}
W_OK, X_OK = 2, 1


def _stat_bytes(mode: int, size: int = 0, rdev: int = 0, ino: int = 1) -> bytes:
    """asm-generic struct stat (riscv64 and arm64): 128 bytes."""
    le = lambda v, n: (v & ((1 << (8 * n)) - 1)).to_bytes(n, "little")  # noqa: E731
    return (le(0x0E, 8) + le(ino, 8) + le(mode, 4) + le(1, 4) + le(0, 4) + le(0, 4) + le(rdev, 8)
            + le(0, 8) + le(size, 8) + le(4096, 4) + le(0, 4) + le((size + 511) // 512, 8)
            + bytes(48) + bytes(8))


def _s32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v




_libc: Any = None


def host_renameat2(old: str, new: str, flags: int) -> int:
    """renameat2(2) of two host paths (glibc's wrapper, which Python's os module lacks): 0 or
    -errno.  Without flags it is os.rename."""
    global _libc
    if not flags:
        try:
            os.rename(old, new)
        except OSError as e:
            return -(e.errno or E.EACCES)
        return 0
    import ctypes
    import ctypes.util
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    if _libc.renameat2(AT_FDCWD, old.encode(), AT_FDCWD, new.encode(), ctypes.c_uint(flags)) == 0:
        return 0
    return -(ctypes.get_errno() or E.EINVAL)
