"""Issue 33 item 10: a permission fault's access type is the access that faulted.  Unicorn's
UC_MEM_WRITE_PROT is 22 and UC_MEM_READ_PROT 23; the table had them swapped, so on arm64 a
write to a read-only page had WnR clear in the ESR (the signal frame's esr_context) and a read
of a PROT_NONE page had it set -- and on riscv the trap's cause was a load page fault for a
store.  Translation faults (unmapped pages) were right already.  si_code (SEGV_ACCERR 2 /
SEGV_MAPERR 1) is the same on both arches.  (qemu-user writes no esr_context record; Linux
reports the ESR of a user-address fault as the hardware gave it: EC 0x24, WnR set for a write.)"""
from __future__ import annotations

import pytest

from emukern.api import Machine

ARCHES = ("riscv64", "arm64")
ARM64 = """\
write_ro=code:2 ec:0x24 wnr:1
read_none=code:2 ec:0x24 wnr:0
write_none=code:2 ec:0x24 wnr:1
write_unmapped=code:1 ec:0x24 wnr:1
read_unmapped=code:1 ec:0x24 wnr:0
"""


@pytest.mark.parametrize("arch", ARCHES)
def test_fault_access_type_in_the_signal_frame(cprog, arch):
    m = Machine()
    m.load(cprog("fault_wnr", arch))
    r = m.run()
    assert r.exit_code == 0, r.message
    want = ARM64 if arch == "arm64" else "".join(l.split(" ec:")[0] + "\n" for l in ARM64.splitlines())
    assert r.stdout.decode() == want
