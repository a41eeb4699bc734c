"""capget (kernel/syscalls/capability.py): the sets emukern's root credentials imply, the version
handshake and ESRCH, as Linux 6.12 answers them (stress-ng's fork stressor calls it)."""
from __future__ import annotations

import pytest

from emukern.api import Machine

EXPECTED = ("v3 r=0 eff=ffffffff/1ff perm=ffffffff/1ff inh=0/0\n"
            "probe r=0 version=20080522\n"
            "bad version r=-1 errno=22 version=20080522\n"
            "no such pid r=-1 errno=3\n"
            "v1 self r=0 eff=ffffffff\n")


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_capget_as_root(cguest, arch):
    r = Machine(arch=arch).load(cguest("capget_probe", arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == EXPECTED
