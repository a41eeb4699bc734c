"""Process-query syscalls real programs and the kernel selftests call: process groups and
sessions (kernel/sys.c setpgid/getpgid/setsid/getsid), resource usage (getrusage, times),
sysinfo, clock_getres, umask, and the RISC-V riscv_hwprobe entry.  Every value comes from the
model: task times are its accounted cycles converted on the machine's clock."""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E

USER_HZ = 100                    # clock_t unit of times() and /proc (ABI constant)
RUSAGE_SELF, RUSAGE_CHILDREN, RUSAGE_THREAD = 0, -1, 1


def _s32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


