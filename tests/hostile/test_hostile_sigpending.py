"""Issue 33 item 6: RLIMIT_SIGPENDING is enforced, so queued signals cannot grow host memory
without bound.  As Linux's __send_signal_locked/__sigqueue_alloc: at the limit a real-time
signal sent with its own siginfo (sigqueue, tgkill) fails with EAGAIN; kill() of it still
succeeds with the siginfo lost (the signal is pending once); a legacy signal loses its
siginfo silently (delivered as SI_USER with zero fields).  The count is per user (the
receiver's real uid), over every task.  qemu-user, on the host kernel, printed the same with
one fewer slot (7: the host user had another signal queued)."""
from __future__ import annotations

import pytest

from emukern.api import Machine

ARCHES = ("riscv64", "arm64")
EXPECTED = """\
setrlimit=0
sigqueue ok=8 eagain=4
kill=0
tgkill=-11
sigqueue_legacy=0
drained=8 last=7 queued_info_ok=1
usr1_pending=1
usr1=1 code=0 value=0
after_drain=0
"""


@pytest.mark.parametrize("arch", ARCHES)
def test_rlimit_sigpending_as_linux(cprog, arch):
    m = Machine()
    m.load(cprog("sigpending_limit", arch))
    r = m.run()
    assert r.exit_code == 0, r.message
    assert r.stdout.decode() == EXPECTED


def test_a_sigqueue_flood_stops_at_the_default_limit(cprog):
    # the default limit (the task limit, as fork_init sets it from max_threads) bounds the queue
    m = Machine()
    m.load(cprog("sigpending_limit", "riscv64"), ["flood"])
    r = m.run()
    k = m.kernel
    assert r.stdout == f"flood={k.config.max_tasks} errno=11\n".encode(), r.message
    assert len(k.init_task.signal.shared_pending.queue) == k.config.max_tasks
