"""process_vm_readv / process_vm_writev (kernel/process_vm.py) with
tests/oracle/guests/process_vm_probe.c, whose output is checked byte for byte against Debian's
6.1/6.12 arm64 and 6.12 riscv64 kernels (tests/oracle/test_oracle_real_kernels.py, case
process_vm).  qemu-user is no oracle here: it answers both calls with ENOSYS."""
from __future__ import annotations

from pathlib import Path

import pytest

from emukern.api import Machine

PROBE = Path(__file__).resolve().parents[1] / "oracle" / "guests" / "process_vm_probe.c"


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_process_vm_rules(cguest, arch):
    r = Machine(arch=arch).load(cguest(PROBE, arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == PROBE.with_suffix(".expected").read_text()


def test_process_vm_counts_as_a_syscall_and_is_deterministic(cguest):
    exe = cguest(PROBE, "arm64")
    a, b = (Machine(arch="arm64").load(exe, []).run() for _ in range(2))
    assert a.syscalls["process_vm_readv"] == 8 and a.syscalls["process_vm_writev"] == 3
    assert (a.stdout, a.cycles) == (b.stdout, b.cycles)
