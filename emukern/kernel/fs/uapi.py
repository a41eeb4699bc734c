"""The uapi numbers of the file syscalls (include/uapi/linux/fcntl.h, stat.h, fs.h: O_*, AT_*,
F_*, S_IF*, RENAME_*), shared by kernel/syscalls/ and the fs code.  Two differ by architecture
(O_DIRECTORY, O_NOFOLLOW: asm-generic vs arm64's own fcntl.h) and are looked up by arch name."""
from __future__ import annotations

import os
from typing import Any

from emukern.kernel import errno as E


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
# openat2's struct open_how.resolve (include/uapi/linux/openat2.h)
RESOLVE_NO_XDEV, RESOLVE_NO_MAGICLINKS, RESOLVE_NO_SYMLINKS = 0x01, 0x02, 0x04
RESOLVE_BENEATH, RESOLVE_IN_ROOT, RESOLVE_CACHED = 0x08, 0x10, 0x20
RESOLVE_SCOPED = RESOLVE_BENEATH | RESOLVE_IN_ROOT


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


def host_renameat2(olddir: int, old: str, newdir: int, new: str, flags: int) -> int:
    """renameat2(2) of two names, each in a held host directory (glibc's wrapper, which Python's
    os module lacks): 0 or -errno.  Without flags it is os.rename with both dir fds."""
    global _libc
    if not flags:
        try:
            os.rename(old, new, src_dir_fd=olddir, dst_dir_fd=newdir)
        except OSError as e:
            return -(e.errno or E.EACCES)
        return 0
    import ctypes
    import ctypes.util
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    if _libc.renameat2(olddir, os.fsencode(old), newdir, os.fsencode(new), ctypes.c_uint(flags)) == 0:
        return 0
    return -(ctypes.get_errno() or E.EINVAL)
