"""Hostile-guest leftovers, item 4: the siginfo each posix timer preallocates (Linux's
sigqueue_alloc at timer_create, kernel/time/posix-timers.c) counts against RLIMIT_SIGPENDING
when any other signal is sent (generate.py sigpending_full), as __sigqueue_alloc's ucounts
count it: with four timers under a limit of four, sigqueue() is EAGAIN and kill() still queues
(override_rlimit); a timer's own expiry is never refused.  The expected lines are what
qemu-user printed on both architectures (the probe runs as an unused uid, so the host's count
holds only its own timers and signals)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from emukern.api import Machine

QEMU = {"riscv64": "qemu-riscv64", "arm64": "qemu-aarch64"}
EXPECTED = """timers: 4
sigqueue with 4 timers: EAGAIN
kill with 4 timers: 0
timer_settime: 0
timer signal: 0 code -2
kill's signal: 2 code 0
timer_delete: 0
sigqueue with 3 timers: 0
sigqueue with 3 timers and one queued: EAGAIN
sigqueue's signal: 1 value 7
"""


@pytest.mark.parametrize("arch", ["riscv64", "arm64"])
def test_timer_siginfos_count_at_send_time(cprog, arch):
    r = Machine(arch=arch).load(cprog("timer_sigqueue", arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == EXPECTED


@pytest.mark.parametrize("arch", ["riscv64", "arm64"])
def test_timer_sigqueue_matches_qemu_user(cprog, arch):
    if shutil.which(QEMU[arch]) is None:
        pytest.skip(f"{QEMU[arch]} is not installed")
    out = subprocess.run([QEMU[arch], str(cprog("timer_sigqueue", arch))], capture_output=True,
                         text=True, timeout=120)
    if out.stdout.startswith("setresuid"):
        pytest.skip("the host cannot change uid")
    assert out.stdout == EXPECTED
