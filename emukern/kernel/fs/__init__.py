"""The guest's file system: a confined root (vfs.py), the synthetic /proc and /dev (procfs.py),
and the open-file objects both hand out (file.py).

Errno values the file system needs beyond emukern.kernel.errno live here (asm-generic numbers).
"""
from __future__ import annotations

E2BIG, ENOEXEC, ENXIO = 7, 8, 6
ENOTEMPTY, ENAMETOOLONG, ELOOP, EROFS, EXDEV = 39, 36, 40, 30, 18
EOVERFLOW = 75
PATH_MAX = 4096          # include/uapi/linux/limits.h: a path argument, NUL included
MAXSYMLINKS = 40         # fs/namei.c: symlinks followed in one walk before ELOOP

# syscall numbers the file system and process-query work adds (asm-generic unistd.h; the same on
# arm64 and riscv64, except 258 which is riscv_hwprobe on RISC-V only)
FS_SYSCALL_NAMES = {
    17: "getcwd", 34: "mkdirat", 35: "unlinkat", 46: "ftruncate", 48: "faccessat", 49: "chdir",
    50: "fchdir", 61: "getdents64", 67: "pread64", 68: "pwrite64", 291: "statx", 439: "faccessat2",
    114: "clock_getres", 153: "times", 154: "setpgid", 155: "getpgid", 156: "getsid",
    157: "setsid", 165: "getrusage", 166: "umask", 179: "sysinfo", 258: "riscv_hwprobe",
    # namespace changes (fs/namei.c); renameat only in arm64's table (its syscall_abis_64)
    36: "symlinkat", 37: "linkat", 38: "renameat", 276: "renameat2",
}
