"""Hostile-guest issue, item 4: each posix timer holds a preallocated siginfo charged to the
user's RLIMIT_SIGPENDING (kernel/time/posix-timers.c alloc_posix_timer -> sigqueue_alloc), so a
guest cannot make timers without bound: past the limit timer_create is EAGAIN.  (qemu-aarch64
gives EAGAIN on the host kernel too, after fewer timers: the host's count also holds the other
processes' of the same user.)"""
from __future__ import annotations

import pytest

from emukern.api import Machine

EXPECTED = """setrlimit: 0
timers: 8 then EAGAIN
delete: 0
sigqueue: 0
create with one queued: -1 EAGAIN
"""


@pytest.mark.parametrize("arch", ["riscv64", "arm64"])
def test_timers_are_charged_to_rlimit_sigpending(cprog, arch):
    r = Machine(arch=arch).load(cprog("timer_sigpending", arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == EXPECTED

