"""uapi constants several parts of the kernel share: USER_HZ (the clock_t unit of times() and
/proc), the RUSAGE_* selectors, and _s32 (a register argument read as a C int)."""
from __future__ import annotations


USER_HZ = 100                    # clock_t unit of times() and /proc (ABI constant)
RUSAGE_SELF, RUSAGE_CHILDREN, RUSAGE_THREAD = 0, -1, 1


def _s32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


