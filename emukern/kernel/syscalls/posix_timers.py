"""timer_create / timer_settime / timer_gettime / timer_getoverrun / timer_delete
<-> kernel/time/posix-timers.c.

Per-process POSIX timers on CLOCK_REALTIME, CLOCK_TAI, CLOCK_MONOTONIC and CLOCK_BOOTTIME (all the
same simulated clock; an absolute expiry is read on the realtime or the monotonic scale),
kept in the process's signal state as ``PosixTimer``, each charged to RLIMIT_SIGPENDING
(timer_create past it: EAGAIN); expiry and signal delivery are in
kernel/signal/timers.py.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.fs.meta import REALTIME_CLOCKS, realtime_to_cycles
from emukern.kernel.signal import base as signal_base
from emukern.kernel.signal import timers as signal_timers
from emukern.kernel.signal.defs import NSIG, s32
from emukern.kernel.signal import generate as signal_generate
from emukern.kernel.signal.state import PosixTimer

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

# the clocks a timer can run on: CLOCK_REALTIME and CLOCK_TAI (the realtime clock, TAI offset 0),
# CLOCK_MONOTONIC and CLOCK_BOOTTIME (the same clock: the machine never suspends).  The _ALARM
# clocks are refused (EINVAL): there is no RTC to wake a suspended machine
TIMER_CLOCKS = (0, 1, 7, 11)


def sys_timer_create(k: "Kernel", cpu, task, clockid, sevp, timerid_ptr, *a):
    signal_base._sig_init(k, task)
    clockid = s32(clockid)
    if clockid not in TIMER_CLOCKS:
        return -E.EINVAL
    # sigqueue_alloc(SIGQUEUE_PREALLOC): the timer's own siginfo, charged to the creator's
    # user for the timer's life, without the override kill's signals get: the same count a
    # refusable signal is checked against
    if signal_generate.sigpending_full(k, task):
        return -E.EAGAIN                    # alloc_posix_timer: sigqueue_alloc refused
    sigs = task.signal
    tm = PosixTimer(timerid=len(sigs.posix_timers) and max(sigs.posix_timers) + 1 or 0)
    tm.clockid = clockid                    # an absolute expiry is a reading of this clock
    if sevp:
        raw = task.mm.read(sevp, 20)
        tm.value = int.from_bytes(raw[0:8], "little")
        tm.signo = s32(int.from_bytes(raw[8:12], "little"))
        tm.notify = s32(int.from_bytes(raw[12:16], "little"))
        tm.tid = s32(int.from_bytes(raw[16:20], "little"))
        if tm.notify not in (signal_timers.SIGEV_SIGNAL, signal_timers.SIGEV_NONE, signal_timers.SIGEV_THREAD_ID):
            return -E.EINVAL
        if tm.notify != signal_timers.SIGEV_NONE and not 1 <= tm.signo <= NSIG:
            return -E.EINVAL
        if tm.notify == signal_timers.SIGEV_THREAD_ID:
            t = k.tasks.get(tm.tid)
            if t is None or t.tgid != task.tgid or not t.alive:
                return -E.EINVAL
    else:
        tm.value = tm.timerid
    sigs.posix_timers[tm.timerid] = tm
    task.mm.write_u32(timerid_ptr, tm.timerid)
    return 0


def sys_timer_settime(k: "Kernel", cpu, task, timerid, flags, new, old, *a):
    signal_base._sig_init(k, task)
    tm = task.signal.posix_timers.get(s32(timerid))
    if tm is None:
        return -E.EINVAL
    if old:
        signal_timers._put_itimerspec(k, task, old, max(0, tm.expires - cpu.now) if tm.expires else 0, tm.interval)
    try:
        interval = signal_timers._timespec(k, task, new)
        value = signal_timers._timespec(k, task, new + 16)
    except ValueError:
        return -E.EINVAL
    tm.seq += 1
    tm.overrun = 0
    tm.interval = k.clock.cycles_for_ns(interval)
    if value == 0:
        tm.expires = 0
        return 0
    if flags & 1:                                   # TIMER_ABSTIME: a reading of its clock
        at = realtime_to_cycles(k, value) if getattr(tm, "clockid", 1) in REALTIME_CLOCKS else k.clock.cycles_for_ns(value)
        tm.expires = max(at, cpu.now + 1)
    else:
        tm.expires = cpu.now + max(1, k.clock.cycles_for_ns(value))
    signal_timers._arm_posix(k, cpu, task, tm)
    return 0


def sys_timer_gettime(k: "Kernel", cpu, task, timerid, cur, *a):
    signal_base._sig_init(k, task)
    tm = task.signal.posix_timers.get(s32(timerid))
    if tm is None:
        return -E.EINVAL
    signal_timers._put_itimerspec(k, task, cur, max(0, tm.expires - cpu.now) if tm.expires else 0, tm.interval)
    return 0


def sys_timer_getoverrun(k: "Kernel", cpu, task, timerid, *a):
    signal_base._sig_init(k, task)
    tm = task.signal.posix_timers.get(s32(timerid))
    return -E.EINVAL if tm is None else tm.overrun


def sys_timer_delete(k: "Kernel", cpu, task, timerid, *a):
    signal_base._sig_init(k, task)
    tm = task.signal.posix_timers.pop(s32(timerid), None)
    if tm is None:
        return -E.EINVAL
    tm.seq += 1
    tm.expires = 0
    return 0
