"""Hostile-guest leftovers, item 5: membarrier's rseq pair (kernel/sched/membarrier.c):
MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ, and MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, which
restarts the rseq critical section a thread of the same mm is in on another CPU (ipi_rseq ->
rseq_preempt): guest_asm/c/hostile/membarrier_rseq.c's spinner, alone on CPU 1 (no switch
would ever abort it), leaves through its abort handler only because of the barrier.  The lines
are Linux 6.12's semantics; qemu-user answers rseq with ENOSYS, so it cannot be the peer."""
from __future__ import annotations

import pytest

from emukern.api import Machine

EXPECTED = """query has the rseq pair: 1
rseq barrier before registering: -1
bad flags: -22
register: 0
registrations: 0x100
flag cpu on another command: -22
rseq barrier, nobody in a section: 0
rseq barrier on cpu 1000: 0
still spinning before the barrier: 1
rseq barrier: 0
the spinner's section returned 1 (1: its abort handler)
"""


@pytest.mark.parametrize("arch", ["riscv64", "arm64"])
def test_membarrier_rseq_restarts_the_other_cpus_section(cprog, arch):
    # the instruction budget turns a spinner that is never aborted into a failure, not a hang
    m = Machine(arch=arch, cpus=2, max_insns=50_000_000)
    r = m.load(cprog("membarrier_rseq", arch), []).run()
    assert r.stdout.decode() == EXPECTED, r.message
    assert r.exit_status == 0, r.message
