"""NT_ARM_SVE of a tracee stopped inside a syscall after it used SVE (guest_asm/c/sve_stop_view.c).

Linux's sve_get_common picks the register form from how the state was *saved* (fp_type), not from
TIF_SVE: a stop inside a syscall saves the FPSIMD form (the syscall ABI lets the SVE-only bits
go), so a debugger reads SVE_PT_REGS_FPSIMD even though the task still has TIF_SVE under
``legacy``.  The regset's size is SVE_PT_SIZE(ARCH_SVE_VQ_MAX = 16), so a large iovec comes back
8,768 bytes long.  The expected text is what Debian 13's 6.12 kernel printed under
`emukern compare --kernel debian-13-arm64` (SVE VL 256, so vl 32 bytes); emukern's output agreed
after the two fixes, and must under every arm64-sve value.
"""
from __future__ import annotations

import pytest

from emukern.api import Machine

REAL_6_12 = ("stop 0: getregset 0 len 8768 size 544 vl 32 flags 0\n"
             "stop 1: getregset 0 len 8768 size 544 vl 32 flags 0\n"
             "stop 2: getregset 0 len 8768 size 544 vl 32 flags 0\n"
             "exit 0\n")


@pytest.mark.parametrize("sve", ["legacy", "p1", "p1+p2"])
def test_stop_in_syscall_reads_fpsimd_form(cguest, sve):
    elf = cguest("sve_stop_view", "arm64")
    m = Machine(arch="arm64", kernel="debian-13-arm64", sve_vl=256, policies={"arm64-sve": sve})
    r = m.load(elf, []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == REAL_6_12
