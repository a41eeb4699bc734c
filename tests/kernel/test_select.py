"""select/pselect (pselect6, kernel/syscalls/select.py) with guest_asm/c/select_probe.c: pipes ready or
not, the time left written back, a wait that a child's write or a signal ends, EBADF / EINVAL /
EFAULT, pselect's temporary mask.  The expected output is what qemu-user (the host kernel) and
Debian 13's arm64 kernel (`emukern compare`: AGREE) print."""
from __future__ import annotations

from pathlib import Path

import pytest

from emukern.api import Machine

EXPECTED = (Path(__file__).parent / "data" / "select_probe.expected").read_text()


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_select_probe_matches_linux(cguest, arch):
    r = Machine(arch=arch).load(cguest("select_probe", arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == EXPECTED
    assert r.syscalls["pselect6"] >= 12 and r.unknown_syscalls == {}


def test_select_is_deterministic(cguest):
    exe = cguest("select_probe", "riscv64")
    a, b = (Machine(arch="riscv64").load(exe, []).run() for _ in range(2))
    assert (a.stdout, a.cycles) == (b.stdout, b.cycles)
