"""/proc/sys/abi/sve_default_vector_length (arch/arm64/kernel/fpsimd.c, vec_proc_do_default_vl).

The file holds the vector length, in bytes, that new processes start with (their VL after
execve unless PR_SVE_SET_VL_ONEXEC said otherwise).  A read prints it; a write is parsed as one
integer (proc_dointvec), ``-1`` means the largest supported length, any other value must be a
valid SVE VL (a multiple of 16 bytes from 16 to SVE_VL_MAX, 8192; else -EINVAL) and is rounded *down* to a
length the machine supports (find_supported_vector_length), as Linux does.  It exists only when
the machine has SVE (sve_sysctl_init is called when system_supports_sve()).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel.sysctl import SysctlEntry
from emukern.kernel.arch.arm64.fpsimd import find_supported_vector_length, sve_vl_valid
from emukern.kernel.sysctl import proc_get_int

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


class SveDefaultVl(SysctlEntry):
    def __init__(self, k: "Kernel") -> None:
        super().__init__("abi.sve_default_vector_length", (k.config.sve_vl or 128) // 8, mode=0o644,
                         minimum=-1, maximum=8192, kind="sve_vl")   # SVE_VL_MAX bytes
        self.k = k

    def parse_write(self, data: bytes) -> tuple[int, int] | None:
        """(VL in bytes, bytes consumed), or None for -EINVAL: one int as proc_dointvec parses
        it, then vec_proc_do_default_vl's rules (-1 = the maximum; else a valid VL, rounded down
        to a supported one)."""
        got = proc_get_int(data)
        if got is None:
            return None
        v, used = got
        if not -(2**31) <= v < 2**31:
            return None
        if v == -1:
            v = max(self.k.config.sve_vls) // 8        # "set to max"
        if not sve_vl_valid(v):
            return None
        return find_supported_vector_length(self.k, v), used

    def set(self, v: int) -> None:
        self.value = v
        self.k.config.sve_vl = v * 8                  # set_default_vl: what the next exec gets


def sve_sysctl_init(k: "Kernel") -> None:
    if k.config.has_sve:
        k.sysctl.register(SveDefaultVl(k))
