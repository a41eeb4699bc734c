"""Interval timers and POSIX timers on the simulated clock — mirrors kernel/time/itimer.c and
kernel/time/posix-timers.c."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.kernel.signal.defs import *            # noqa: F401,F403  (the uapi numbers)
from emukern.kernel.signal.defs import _mask        # noqa: F401
from emukern.kernel.signal.state import *           # noqa: F401,F403

from emukern.kernel.task import Task, TaskState      # noqa: F401

if TYPE_CHECKING:
    from emukern.machine.cpu_base import Cpu
    from emukern.machine.trap import Trap
from emukern.kernel.signal.state import _PosixTimerEvent, _RealTimer
from emukern.kernel.signal import generate as signal_generate
from emukern.kernel.signal.defs import ITIMER_PROF
from emukern.kernel.signal.defs import ITIMER_REAL
from emukern.kernel.signal.defs import ITIMER_VIRTUAL
from emukern.kernel.signal.defs import SIGALRM
from emukern.kernel.signal.defs import SIGPROF
from emukern.kernel.signal.defs import SIGVTALRM
from emukern.kernel.signal.defs import SI_KERNEL
from emukern.kernel.signal.defs import SI_TIMER
from emukern.kernel.signal.state import ITimer
from emukern.kernel.signal.state import KSigInfo
from emukern.kernel.signal.state import PosixTimer
from emukern.kernel.signal.state import _PosixTimerEvent
from emukern.kernel.signal.state import _RealTimer
from emukern.kernel.task import Task
from typing import Any
import struct
if TYPE_CHECKING:
    from emukern.kernel.types import Kernel
    from emukern.machine.cpu_base import Cpu



def _hrtimer_forward(it: Any, when: int) -> bool:
    """An expired interval timer's next expiry (hrtimer_forward): one interval on from the last,
    but after ``when`` (expiries missed meanwhile are not delivered one by one).  False, with the
    timer disarmed, for a one-shot timer."""
    if it.interval:
        it.expires = max(it.expires + it.interval, when + 1)
        return True
    it.expires = 0
    return False


# ---- usage and time --------------------------------------------------------------------------
def _timeval_of_cycles(k: "Kernel", cycles: int) -> bytes:
    us = int(k.clock.ns(cycles)) // 1000
    return struct.pack("<qq", us // 10**6, us % 10**6)


# ---- interval timers (kernel/time/itimer.c) -------------------------------------------------
def _timeval(k: "Kernel", task, ptr) -> int:
    raw = task.mm.read(ptr, 16)
    sec, usec = int.from_bytes(raw[:8], "little", signed=True), int.from_bytes(raw[8:], "little", signed=True)
    if sec < 0 or not 0 <= usec < 10**6:
        raise ValueError
    return k.clock.cycles_for_ns(sec * 10**9 + usec * 1000)


def _put_itimer(k: "Kernel", task, ptr, value_cycles: int, interval_cycles: int) -> None:
    def tv(c: int) -> bytes:
        us = int(k.clock.ns(c)) // 1000 if c else 0
        if c and us == 0:
            us = 1
        return (us // 10**6).to_bytes(8, "little") + (us % 10**6).to_bytes(8, "little")
    task.mm.write(ptr, tv(interval_cycles) + tv(value_cycles))


def _itimer_now(k: "Kernel", cpu, task: Task, which: int) -> int:
    if which == ITIMER_REAL:
        return cpu.now
    group = [t for t in k.tasks.values() if t.tgid == task.tgid]
    if which == ITIMER_VIRTUAL:
        return sum(t.utime for t in group)
    return sum(t.utime + t.stime for t in group)


def _arm_real(k: "Kernel", cpu, task: Task, it: ITimer) -> None:
    import heapq
    k._seq += 1
    pc = k.percpu[cpu.index]
    heapq.heappush(pc.timers, (it.expires, k._seq, _RealTimer(task.signal, it.seq, task.tgid)))


def it_real_fn(k: "Kernel", cpu: "Cpu", ev: Any, when: int) -> None:
    """The ITIMER_REAL hrtimer fired: SIGALRM to the process, re-armed with the interval."""
    if isinstance(ev, _PosixTimerEvent):
        posix_timer_fn(k, cpu, ev, when)
        return
    fire = getattr(ev, "timer_fire", None)
    if fire is not None:                # another kind's hrtimer (a timerfd: kernel/timerfd.py)
        fire(k, cpu, when)
        return
    sigs = ev.signal
    it = sigs.itimers[ITIMER_REAL]
    if it.seq != ev.seq or not it.expires:
        return
    leader = _group_task(k, sigs)
    if leader is None:
        it.expires = 0
        return
    if _hrtimer_forward(it, when):
        _arm_real(k, cpu, leader, it)
    signal_generate.send_signal(k, cpu, leader, KSigInfo(SIGALRM, SI_KERNEL), True)


def _group_task(k: "Kernel", sigs: Any) -> Task | None:
    """The live thread with the lowest tid sharing ``sigs``: who a process-wide timer's
    signal is sent to (None once the whole group is gone)."""
    return next((t for t in sorted(k.tasks.values(), key=lambda x: x.tid)
                 if t.signal is sigs and t.alive), None)


def itimer_tick(k: "Kernel", cpu: "Cpu", task: Task) -> None:
    """check_process_timers at the tick: ITIMER_VIRTUAL / ITIMER_PROF expiry."""
    sigs = task.signal
    if sigs is None:
        return
    for which, sig in ((ITIMER_VIRTUAL, SIGVTALRM), (ITIMER_PROF, SIGPROF)):
        it = sigs.itimers[which]
        if it.expires and _itimer_now(k, cpu, task, which) >= it.expires:
            it.expires = it.expires + it.interval if it.interval else 0
            signal_generate.send_signal(k, cpu, task, KSigInfo(sig, SI_KERNEL), True)


SIGEV_SIGNAL, SIGEV_NONE, SIGEV_THREAD_ID = (0, 1, 4)


def _timespec(k: "Kernel", task, ptr) -> int:
    raw = task.mm.read(ptr, 16)
    sec, nsec = int.from_bytes(raw[:8], "little", signed=True), int.from_bytes(raw[8:], "little", signed=True)
    if sec < 0 or not 0 <= nsec < 10**9:
        raise ValueError
    return sec * 10**9 + nsec


def _put_itimerspec(k: "Kernel", task, ptr, left: int, interval: int) -> None:
    def ts(c: int) -> bytes:
        ns = int(k.clock.ns(c)) if c else 0
        return (ns // 10**9).to_bytes(8, "little") + (ns % 10**9).to_bytes(8, "little")
    task.mm.write(ptr, ts(interval) + ts(left))


def _arm_posix(k: "Kernel", cpu, task: Task, tm: PosixTimer) -> None:
    import heapq
    k._seq += 1
    heapq.heappush(k.percpu[cpu.index].timers,
                   (tm.expires, k._seq, _PosixTimerEvent(task.signal, tm, tm.seq)))


def posix_timer_fn(k: "Kernel", cpu: "Cpu", ev: "_PosixTimerEvent", when: int) -> None:
    """The timer expired: queue its signal (one queued instance at most; further expiries
    while it is pending count as overruns), re-arm with the interval."""
    tm = ev.timer
    if tm.seq != ev.seq or not tm.expires:
        return
    target = None
    if tm.notify == SIGEV_THREAD_ID:
        target = k.tasks.get(tm.tid)
    if target is None or not target.alive:
        target = _group_task(k, ev.signal)
    if target is None:
        tm.expires = 0
        return
    if _hrtimer_forward(tm, when):
        _arm_posix(k, cpu, target, tm)
    if tm.notify == SIGEV_NONE:
        return
    pend = target.sigstate.pending if tm.notify == SIGEV_THREAD_ID else target.signal.shared_pending
    if any(q.timerid == tm.timerid and q.code == SI_TIMER for q in pend.queue):
        tm.overrun += 1
        return
    info = KSigInfo(tm.signo, SI_TIMER, timerid=tm.timerid, value=tm.value, overrun=tm.overrun)
    tm.overrun = 0
    if not signal_generate.prepare_signal(k, cpu, target, tm.signo):
        return
    pend.add(info)
    signal_generate.complete_signal(k, cpu, target, tm.signo, tm.notify != SIGEV_THREAD_ID)
