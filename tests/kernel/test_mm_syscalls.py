"""mremap, mlock/munlock/mlock2/mlockall/munlockall, msync, mincore and membarrier
(kernel/mm/vma.py) with tests/oracle/guests/mremap_probe.c, whose output is also a
real-kernel oracle case (tests/oracle/test_oracle_real_kernels.py, case mremap).  qemu-user
agrees on every line it can run except mremap's new_len 0 and private old_len 0 (qemu's own
target_mremap answers ENOMEM where Linux's SYSCALL_DEFINE5(mremap) says EINVAL), mlock2
(ENOSYS in qemu) and the shared duplicate (qemu crashes).  `emukern compare` agreed on all 55
lines with Debian's Linux 6.1 arm64 and 6.12 riscv64, and on memfd_probe's 20 with 6.1 arm64."""
from __future__ import annotations

from pathlib import Path

import pytest

from emukern.api import Machine

PROBE = Path(__file__).resolve().parents[1] / "oracle" / "guests" / "mremap_probe.c"


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_mremap_probe(cguest, arch):
    r = Machine(arch=arch).load(cguest(PROBE, arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == PROBE.with_suffix(".expected").read_text()


def test_mremap_counts_and_is_deterministic(cguest):
    exe = cguest(PROBE, "riscv64")
    a, b = (Machine(arch="riscv64").load(exe, []).run() for _ in range(2))
    assert a.syscalls["mremap"] >= 20 and a.syscalls["membarrier"] == 7
    assert (a.stdout, a.cycles) == (b.stdout, b.cycles)


MEMFD = PROBE.with_name("memfd_probe.c")


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_memfd_probe(cguest, arch):
    """memfd_create's file (kernel/mm/vma.py MemfdFile); qemu-user forwards memfd_create
    to the host kernel and prints the same lines."""
    r = Machine(arch=arch).load(cguest(MEMFD, arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == MEMFD.with_suffix(".expected").read_text()
