"""mseal'd vma in /proc/self/smaps: VmFlags ends with "sl" (VM_SEALED, bit 63), as Debian 13's
6.12 arm64 kernel printed for guest_asm/c/mseal_smaps.c under `emukern compare`."""
from __future__ import annotations

import pytest

from emukern.api import Machine

REAL = "mseal 0\nVmFlags: rd wr mr mw me ac sl \n"


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_sealed_vma_flag(cguest, arch):
    r = Machine(arch=arch).load(cguest("mseal_smaps", arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == REAL
