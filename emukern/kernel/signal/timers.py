"""Interval timers and POSIX timers on the simulated clock — mirrors kernel/time/itimer.c and
kernel/time/posix-timers.c."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.kernel.signal.defs import *            # noqa: F401,F403  (the uapi numbers)
from emukern.kernel.signal.defs import _mask        # noqa: F401
from emukern.kernel.signal.state import *           # noqa: F401,F403
from emukern.kernel.signal.base import SignalBase
from emukern.kernel.task import Task, TaskState      # noqa: F401

if TYPE_CHECKING:
    from emukern.machine.cpu_base import Cpu
    from emukern.machine.trap import Trap
from emukern.kernel.signal.state import _PosixTimerEvent, _RealTimer



def _hrtimer_forward(it: Any, when: int) -> bool:
    """An expired interval timer's next expiry (hrtimer_forward): one interval on from the last,
    but after ``when`` (expiries missed meanwhile are not delivered one by one).  False, with the
    timer disarmed, for a one-shot timer."""
    if it.interval:
        it.expires = max(it.expires + it.interval, when + 1)
        return True
    it.expires = 0
    return False

class SignalTimers(SignalBase):
    """setitimer/getitimer and timer_create/settime/gettime/getoverrun/delete."""

    # ---- interval timers (kernel/time/itimer.c) -------------------------------------------------
    def _timeval(self, task, ptr) -> int:
        raw = task.mm.read(ptr, 16)
        sec, usec = int.from_bytes(raw[:8], "little", signed=True), int.from_bytes(raw[8:], "little", signed=True)
        if sec < 0 or not 0 <= usec < 10**6:
            raise ValueError
        return self.clock.cycles_for_ns(sec * 10**9 + usec * 1000)

    def _put_itimer(self, task, ptr, value_cycles: int, interval_cycles: int) -> None:
        def tv(c: int) -> bytes:
            us = int(self.clock.ns(c)) // 1000 if c else 0
            if c and us == 0:
                us = 1
            return (us // 10**6).to_bytes(8, "little") + (us % 10**6).to_bytes(8, "little")
        task.mm.write(ptr, tv(interval_cycles) + tv(value_cycles))

    def _itimer_now(self, cpu, task: Task, which: int) -> int:
        if which == ITIMER_REAL:
            return cpu.now
        group = [t for t in self.tasks.values() if t.tgid == task.tgid]
        if which == ITIMER_VIRTUAL:
            return sum(t.utime for t in group)
        return sum(t.utime + t.stime for t in group)

    def sys_getitimer(self, cpu, task, which, value, *a):
        self._sig_init(task)
        which = s32(which)
        if which not in (0, 1, 2):
            return -E.EINVAL
        self.account(cpu, task)
        it = task.signal.itimers[which]
        left = max(0, it.expires - self._itimer_now(cpu, task, which)) if it.expires else 0
        self._put_itimer(task, value, left, it.interval)
        return 0

    def sys_setitimer(self, cpu, task, which, value, ovalue, *a):
        """ITIMER_REAL counts simulated time and sends SIGALRM (glibc's alarm() is this call);
        ITIMER_VIRTUAL (SIGVTALRM) and ITIMER_PROF (SIGPROF) count the process's user, and user +
        system, cycles and are checked at each tick, as Linux's tick-based accounting does."""
        self._sig_init(task)
        which = s32(which)
        if which not in (0, 1, 2):
            return -E.EINVAL
        cpu.charge(self.cost.syscall_body)
        self.account(cpu, task)
        it = task.signal.itimers[which]
        now = self._itimer_now(cpu, task, which)
        if ovalue:
            left = max(0, it.expires - now) if it.expires else 0
            self._put_itimer(task, ovalue, left, it.interval)
        if value:
            try:
                raw = task.mm.read(value, 32)
                interval = self._timeval(task, value)
                val = self._timeval(task, value + 16)
            except ValueError:
                return -E.EINVAL
            del raw
            it.seq += 1
            it.interval = interval
            it.expires = now + val if val else 0
            if which == ITIMER_REAL and it.expires:
                self._arm_real(cpu, task, it)
        return 0

    def _arm_real(self, cpu, task: Task, it: ITimer) -> None:
        import heapq
        self._seq += 1
        pc = self.percpu[cpu.index]
        heapq.heappush(pc.timers, (it.expires, self._seq, _RealTimer(task.signal, it.seq, task.tgid)))

    def it_real_fn(self, cpu: "Cpu", ev: Any, when: int) -> None:
        """The ITIMER_REAL hrtimer fired: SIGALRM to the process, re-armed with the interval."""
        if isinstance(ev, _PosixTimerEvent):
            self.posix_timer_fn(cpu, ev, when)
            return
        fire = getattr(ev, "timer_fire", None)
        if fire is not None:                # another kind's hrtimer (a timerfd: kernel/timerfd.py)
            fire(self, cpu, when)
            return
        sigs = ev.signal
        it = sigs.itimers[ITIMER_REAL]
        if it.seq != ev.seq or not it.expires:
            return
        leader = self._group_task(sigs)
        if leader is None:
            it.expires = 0
            return
        if _hrtimer_forward(it, when):
            self._arm_real(cpu, leader, it)
        self.send_signal(cpu, leader, KSigInfo(SIGALRM, SI_KERNEL), True)

    def _group_task(self, sigs: Any) -> Task | None:
        """The live thread with the lowest tid sharing ``sigs``: who a process-wide timer's
        signal is sent to (None once the whole group is gone)."""
        return next((t for t in sorted(self.tasks.values(), key=lambda x: x.tid)
                     if t.signal is sigs and t.alive), None)

    def itimer_tick(self, cpu: "Cpu", task: Task) -> None:
        """check_process_timers at the tick: ITIMER_VIRTUAL / ITIMER_PROF expiry."""
        sigs = task.signal
        if sigs is None:
            return
        for which, sig in ((ITIMER_VIRTUAL, SIGVTALRM), (ITIMER_PROF, SIGPROF)):
            it = sigs.itimers[which]
            if it.expires and self._itimer_now(cpu, task, which) >= it.expires:
                it.expires = it.expires + it.interval if it.interval else 0
                self.send_signal(cpu, task, KSigInfo(sig, SI_KERNEL), True)

    # ---- POSIX timers (kernel/time/posix-timers.c) ----------------------------------------------
    SIGEV_SIGNAL, SIGEV_NONE, SIGEV_THREAD_ID = 0, 1, 4

    def sys_timer_create(self, cpu, task, clockid, sevp, timerid_ptr, *a):
        self._sig_init(task)
        clockid = s32(clockid)
        if clockid not in (0, 1):               # CLOCK_REALTIME, CLOCK_MONOTONIC
            return -E.EINVAL
        sigs = task.signal
        tm = PosixTimer(timerid=len(sigs.posix_timers) and max(sigs.posix_timers) + 1 or 0)
        if sevp:
            raw = task.mm.read(sevp, 20)
            tm.value = int.from_bytes(raw[0:8], "little")
            tm.signo = s32(int.from_bytes(raw[8:12], "little"))
            tm.notify = s32(int.from_bytes(raw[12:16], "little"))
            tm.tid = s32(int.from_bytes(raw[16:20], "little"))
            if tm.notify not in (self.SIGEV_SIGNAL, self.SIGEV_NONE, self.SIGEV_THREAD_ID):
                return -E.EINVAL
            if tm.notify != self.SIGEV_NONE and not 1 <= tm.signo <= NSIG:
                return -E.EINVAL
            if tm.notify == self.SIGEV_THREAD_ID:
                t = self.tasks.get(tm.tid)
                if t is None or t.tgid != task.tgid or not t.alive:
                    return -E.EINVAL
        else:
            tm.value = tm.timerid
        sigs.posix_timers[tm.timerid] = tm
        task.mm.write_u32(timerid_ptr, tm.timerid)
        return 0

    def _timespec(self, task, ptr) -> int:
        raw = task.mm.read(ptr, 16)
        sec, nsec = int.from_bytes(raw[:8], "little", signed=True), int.from_bytes(raw[8:], "little", signed=True)
        if sec < 0 or not 0 <= nsec < 10**9:
            raise ValueError
        return sec * 10**9 + nsec

    def _put_itimerspec(self, task, ptr, left: int, interval: int) -> None:
        def ts(c: int) -> bytes:
            ns = int(self.clock.ns(c)) if c else 0
            return (ns // 10**9).to_bytes(8, "little") + (ns % 10**9).to_bytes(8, "little")
        task.mm.write(ptr, ts(interval) + ts(left))

    def sys_timer_settime(self, cpu, task, timerid, flags, new, old, *a):
        self._sig_init(task)
        tm = task.signal.posix_timers.get(s32(timerid))
        if tm is None:
            return -E.EINVAL
        if old:
            self._put_itimerspec(task, old, max(0, tm.expires - cpu.now) if tm.expires else 0, tm.interval)
        try:
            interval = self._timespec(task, new)
            value = self._timespec(task, new + 16)
        except ValueError:
            return -E.EINVAL
        tm.seq += 1
        tm.overrun = 0
        tm.interval = self.clock.cycles_for_ns(interval)
        if value == 0:
            tm.expires = 0
            return 0
        if flags & 1:                                   # TIMER_ABSTIME
            tm.expires = max(self.clock.cycles_for_ns(value), cpu.now + 1)
        else:
            tm.expires = cpu.now + max(1, self.clock.cycles_for_ns(value))
        self._arm_posix(cpu, task, tm)
        return 0

    def _arm_posix(self, cpu, task: Task, tm: PosixTimer) -> None:
        import heapq
        self._seq += 1
        heapq.heappush(self.percpu[cpu.index].timers,
                       (tm.expires, self._seq, _PosixTimerEvent(task.signal, tm, tm.seq)))

    def sys_timer_gettime(self, cpu, task, timerid, cur, *a):
        self._sig_init(task)
        tm = task.signal.posix_timers.get(s32(timerid))
        if tm is None:
            return -E.EINVAL
        self._put_itimerspec(task, cur, max(0, tm.expires - cpu.now) if tm.expires else 0, tm.interval)
        return 0

    def sys_timer_getoverrun(self, cpu, task, timerid, *a):
        self._sig_init(task)
        tm = task.signal.posix_timers.get(s32(timerid))
        return -E.EINVAL if tm is None else tm.overrun

    def sys_timer_delete(self, cpu, task, timerid, *a):
        self._sig_init(task)
        tm = task.signal.posix_timers.pop(s32(timerid), None)
        if tm is None:
            return -E.EINVAL
        tm.seq += 1
        tm.expires = 0
        return 0

    def posix_timer_fn(self, cpu: "Cpu", ev: "_PosixTimerEvent", when: int) -> None:
        """The timer expired: queue its signal (one queued instance at most; further expiries
        while it is pending count as overruns), re-arm with the interval."""
        tm = ev.timer
        if tm.seq != ev.seq or not tm.expires:
            return
        target = None
        if tm.notify == self.SIGEV_THREAD_ID:
            target = self.tasks.get(tm.tid)
        if target is None or not target.alive:
            target = self._group_task(ev.signal)
        if target is None:
            tm.expires = 0
            return
        if _hrtimer_forward(tm, when):
            self._arm_posix(cpu, target, tm)
        if tm.notify == self.SIGEV_NONE:
            return
        pend = target.sigstate.pending if tm.notify == self.SIGEV_THREAD_ID else target.signal.shared_pending
        if any(q.timerid == tm.timerid and q.code == SI_TIMER for q in pend.queue):
            tm.overrun += 1
            return
        info = KSigInfo(tm.signo, SI_TIMER, timerid=tm.timerid, value=tm.value, overrun=tm.overrun)
        tm.overrun = 0
        if not self.prepare_signal(cpu, target, tm.signo):
            return
        pend.add(info)
        self.complete_signal(cpu, target, tm.signo, tm.notify != self.SIGEV_THREAD_ID)
