"""getitimer / setitimer <-> kernel/time/itimer.c.

ITIMER_REAL runs on simulated time and sends SIGALRM; ITIMER_VIRTUAL and ITIMER_PROF count the
process's user (and user + system) cycles and are checked at each tick.  The timer state and
its arming are in kernel/signal/timers.py.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.signal import base as signal_base
from emukern.kernel.signal import timers as signal_timers
from emukern.kernel.signal.defs import ITIMER_REAL, s32

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_getitimer(k: "Kernel", cpu, task, which, value, *a):
    signal_base._sig_init(k, task)
    which = s32(which)
    if which not in (0, 1, 2):
        return -E.EINVAL
    k.sched.account(cpu, task)
    it = task.signal.itimers[which]
    left = max(0, it.expires - signal_timers._itimer_now(k, cpu, task, which)) if it.expires else 0
    signal_timers._put_itimer(k, task, value, left, it.interval)
    return 0


def sys_setitimer(k: "Kernel", cpu, task, which, value, ovalue, *a):
    """ITIMER_REAL counts simulated time and sends SIGALRM (glibc's alarm() is this call);
    ITIMER_VIRTUAL (SIGVTALRM) and ITIMER_PROF (SIGPROF) count the process's user, and user +
    system, cycles and are checked at each tick, as Linux's tick-based accounting does."""
    signal_base._sig_init(k, task)
    which = s32(which)
    if which not in (0, 1, 2):
        return -E.EINVAL
    cpu.charge(k.cost.syscall_body)
    k.sched.account(cpu, task)
    it = task.signal.itimers[which]
    now = signal_timers._itimer_now(k, cpu, task, which)
    if ovalue:
        left = max(0, it.expires - now) if it.expires else 0
        signal_timers._put_itimer(k, task, ovalue, left, it.interval)
    if value:
        try:
            raw = task.mm.read(value, 32)
            interval = signal_timers._timeval(k, task, value)
            val = signal_timers._timeval(k, task, value + 16)
        except ValueError:
            return -E.EINVAL
        del raw
        it.seq += 1
        it.interval = interval
        it.expires = now + val if val else 0
        if which == ITIMER_REAL and it.expires:
            signal_timers._arm_real(k, cpu, task, it)
    return 0
