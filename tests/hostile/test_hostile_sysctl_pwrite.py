"""Hostile issue 17: pread64/pwrite64 on a /proc/sys file are positional I/O, not ESPIPE.

Linux 6.12: proc_sys_open does not call nonseekable_open, so the file keeps FMODE_PREAD and
FMODE_PWRITE; proc_sys_call_handler passes ``&iocb->ki_pos`` (the pwrite offset) to the
handler, and __do_proc_dointvec under the default sysctl_writes_strict=1 ignores a write whose
position is not 0 (proc_first_pos_non_zero_ignore: 0 bytes, nothing changed).  A positional
call never moves the file position (guest_asm/c/hostile/sysctl_pwrite.c)."""
from __future__ import annotations

import pytest

from emukern.api import Machine
from emukern.kernel import errno as E

KNOBS = {"riscv64": "/proc/sys/abi/riscv_v_vstate_discard", "arm64": "/proc/sys/abi/swp"}
EXPECTED = f"""\
write0=1 value=0
pwrite_at5=0 value=0
pwrite_at0=1 value=1
pos=1
pwrite_bad={-E.EINVAL} value=1
pwrite_neg={-E.EINVAL}
pread_at0=2 first=49
pread_at1=1
pread_at9=0
pos_after=1
pwrite_at0_again=1 value=0
"""


@pytest.mark.parametrize("arch", list(KNOBS))
def test_pwrite_pread_on_proc_sys(cprog, arch):
    r = Machine().load(cprog("sysctl_pwrite", arch), [KNOBS[arch]]).run()
    assert r.exit_code == 0, r.message
    assert r.stdout.decode() == EXPECTED
