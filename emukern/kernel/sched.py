"""The scheduler: per-CPU run queues, wake-ups, timers, accounting and the context switch.

Owned by :class:`emukern.kernel.kernel.Kernel` as ``kernel.sched``.  ``schedule()`` picks the next task for a CPU;
``_switch_out``/``_switch_in`` are ``context_switch``: the outgoing task's registers are saved and
the arch's ``__switch_to`` halves run (FP/vector state stays on the CPU until the arch saves it),
then the incoming task's mm and registers are loaded.  A task blocked in a syscall re-runs it
from the start when it is switched back in (``entry.restart_syscall``), like Linux's wait loops; one
preempted inside a syscall continues it instead (kernel/preempt.py, ``resume_syscall``).
"""
from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.kernel.files import WaitQueue
from emukern.kernel.task import Task, TaskState

# TaskState members as module constants (an Enum member read from its class is an attribute
# lookup through the enum machinery, on both halves of every switch)
_RUNNABLE = TaskState.RUNNABLE
_BLOCKED = TaskState.BLOCKED
from emukern.machine.cpu_base import Cpu
from emukern.machine.trap import Trap

if TYPE_CHECKING:
    from emukern.kernel.arch.arm64.fpsimd import FpsimdLastState
    from emukern.kernel.types import Kernel
from emukern.kernel import entry as kernel_entry
from emukern.kernel.sched_fair import FairClass
from emukern.kernel.signal import rseq as signal_rseq
from emukern.kernel.signal import timers as signal_timers


# The end of the simulated clock, in cycles (Linux's KTIME_MAX for this model): 2^62 cycles are
# 146 years at 1 GHz.  Time arithmetic saturates here: a timeout at or past it never fires (an
# hrtimer at KTIME_MAX), so the sleeper waits forever and is reported as such.
TIME_MAX = 1 << 62


@dataclass
class PerCpu:
    """Per-CPU scheduler state (Linux ``struct rq`` plus a few per-CPU variables)."""
    index: int
    curr: Task | None = None
    rq: deque = field(default_factory=deque)
    next_tick: int = 0
    timers: list = field(default_factory=list)       # heap of (wake_at, seq, task)
    need_resched: bool = False
    nr_switches: int = 0
    ticks: int = 0
    last_mark: int = 0          # accounting mark (cycles) for the current task
    user_mark: int = 0          # user-cycle mark (Cpu.user_cycles) for the current task
    parked_trap: Trap | None = None  # a trap waiting at a sync point (Kernel.sync_gate)
    sync_hint: bool = False     # its last run reached a sync point: next run stops at sync_floor
    last_ino: int = 0           # get_next_ino's per-CPU batch position
    kernel_mode_v: bool = False  # RISC-V: inside kernel_vector_begin/end (RISCV_KERNEL_MODE_V)
    kernel_vector_cycles: int = 0  # RISC-V: cycles of vector code the kernel ran on this CPU
    # arm64: whose user FP state is live in this CPU's registers (fpsimd.py's fpsimd_last_state)
    fpsimd_last_state: "FpsimdLastState | None" = None


class Scheduler:
    """The scheduler, owned by the kernel as ``kernel.sched``: run queues (``kernel.percpu``),
    wake-ups, timers, accounting, ``schedule()`` and the context switch.

    Its interface (what the syscall, signal and run-loop code call): :meth:`select_cpu`,
    :meth:`enqueue`, :meth:`wake_up`, :meth:`wake_queue`, :meth:`add_timer`, :meth:`run_timers`,
    :meth:`account`, :meth:`block_current`, :meth:`schedule`.  What it needs from the rest of
    the kernel it reaches through ``self.k`` (the arch's switch hooks, the syscall table for a
    restart, the signal code for ERESTART and ITIMER_REAL)."""

    def __init__(self, k: "Kernel") -> None:
        self.k = k
        self.percpu: list[PerCpu] = k.percpu      # the run queues (the same list as kernel.percpu)
        # the run-queue policy (--sched): Linux's fair class (EEVDF, kernel/sched_fair.py), or
        # None for the plain round-robin queue emukern had before it ("rr": the order tasks were
        # queued, a whole tick each)
        self.fair: FairClass | None = FairClass(k) if k.config.sched == "fair" else None

    def select_cpu(self, task: Task, new: bool = False) -> int:
        """select_task_rq: a new task goes to the least loaded allowed CPU (fork balancing); a
        woken task stays on its previous CPU when that CPU is idle or no allowed CPU is idle."""
        if new or not task.allowed_on(task.cpu) or task.cpu >= len(self.k.cpus):
            return self._least_loaded(task)
        prev = self.percpu[task.cpu]
        if prev.curr is None and not prev.rq:
            return task.cpu
        best = self._least_loaded(task)
        b = self.percpu[best]
        return best if b.curr is None and not b.rq else task.cpu

    def _least_loaded(self, task: Task) -> int:
        best, load = 0, None
        for pc in self.percpu:
            if not task.allowed_on(pc.index):
                continue
            n = len(pc.rq) + (pc.curr is not None)
            if load is None or n < load:
                best, load = pc.index, n
        return best

    def enqueue(self, task: Task, cpu_index: int, now: int) -> None:
        if task.cpu != cpu_index and task.rseq is not None:
            signal_rseq.rseq_migrate(task)          # its rseq area's cpu_id is stale
        task.cpu = cpu_index
        task.state = TaskState.RUNNABLE
        task.ready_at = now
        pc = self.percpu[cpu_index]
        if self.fair is not None:
            self.fair.enqueue(pc, task, max(now, self.k.cpus[cpu_index].now))
        pc.rq.append(task)

    def wake_up(self, task: Task, now: int, value: int | None = None) -> None:
        """try_to_wake_up: make a blocked task runnable on a CPU's run queue.

        (The wake-up of every pipe write: select_cpu's one-CPU answer and :meth:`enqueue` are
        written out, and the fair class queues the task and asks about preemption in one call.)"""
        if task.state is not _BLOCKED:
            return
        task.woken_value = value
        task.wake_at = None
        task.sleeps_forever = False
        k = self.k
        cpus = k.cpus
        prev_cpu = task.cpu
        aff = task.affinity
        if len(cpus) == 1 and prev_cpu == 0 and (not aff or 0 in aff):
            target = 0                  # select_task_rq with one CPU: the one it slept on
        else:
            target = self.select_cpu(task)
        # enqueue, inline (a change there is made here too)
        if prev_cpu != target and task.rseq is not None:
            signal_rseq.rseq_migrate(task)          # its rseq area's cpu_id is stale
        task.cpu = target
        task.state = _RUNNABLE
        task.ready_at = now
        pc = self.percpu[target]
        fair = self.fair
        if fair is None:
            pc.rq.append(task)
            return
        cpu = cpus[target]
        cnow = cpu.now
        # enqueue_task_fair at the later of the wake time and the CPU's clock, then
        # check_preempt_wakeup_fair at the CPU's clock unless a reschedule is pending already
        if fair.enqueue_wakeup(pc, task, now if now > cnow else cnow, cnow, not pc.need_resched):
            pc.need_resched = True              # resched_curr: it enters schedule() soon
            cpu.stop()

    def wake_queue(self, wq: WaitQueue, now: int, nr: int | None = None, value: int | None = None) -> int:
        wq.wakes += 1
        n = 0
        while wq.waiters and (nr is None or n < nr):
            t = wq.waiters.popleft()
            if t.state == TaskState.BLOCKED:
                self.wake_up(t, now, value)
                n += 1
        return n

    def add_timer(self, task: Task, wake_at: int) -> bool:
        """hrtimer_start for a sleeper; False (and no timer) when ``wake_at`` saturated at the end
        of the clock: like a timer at KTIME_MAX it never fires, the task sleeps forever."""
        if wake_at >= TIME_MAX:
            task.wake_at = None
            task.sleeps_forever = True
            return False
        task.sleeps_forever = False
        task.wake_at = wake_at
        self.k._seq += 1
        heapq.heappush(self.percpu[task.cpu].timers, (wake_at, self.k._seq, task))
        return True

    def run_timers(self, cpu: Cpu) -> None:
        pc = self.percpu[cpu.index]
        while pc.timers and pc.timers[0][0] <= cpu.now:
            wake_at, _, task = heapq.heappop(pc.timers)
            if task.state is None:                      # a process's ITIMER_REAL (signal.py)
                signal_timers.it_real_fn(self.k, cpu, task, wake_at)
                continue
            if task.state == TaskState.BLOCKED and task.wake_at == wake_at:
                task.woken_value = -E.ETIMEDOUT
                for wq in task.waitqueues:
                    wq.remove(task)
                self.wake_up(task, wake_at, -E.ETIMEDOUT)

    def account(self, cpu: Cpu, task: Task | None) -> int:
        """Charge the time since the last mark to ``task`` (user vs system) and move the marks;
        returns the time now (the mark)."""
        pc = self.percpu[cpu.index]
        now, ucycles = cpu.marks()          # (now, user_cycles) in one call
        if task is not None:
            user = ucycles - pc.user_mark
            total = now - pc.last_mark
            # user time = user instructions + their extra vector cycles; the rest is system time
            task.utime += min(user, total)
            task.stime += max(0, total - user)
        pc.last_mark = now
        pc.user_mark = ucycles
        return now

    def block_current(self, cpu: Cpu, task: Task, reason: str) -> None:
        task.state = TaskState.BLOCKED
        task.wait_reason = reason
        self.percpu[cpu.index].need_resched = True
        cpu.stop()

    def sleep_on(self, cpu: Cpu, task: Task, wq: WaitQueue, reason: str) -> None:
        """Put the current task to sleep on one wait queue (prepare_to_wait + schedule): a
        wake_queue of ``wq`` makes it runnable, and a signal takes it off ``wq`` again."""
        wq.add(task)
        task.waitqueues = [wq]
        # block_current, inline (a change there is made here too): every pipe read that waits
        task.state = _BLOCKED
        task.wait_reason = reason
        self.percpu[cpu.index].need_resched = True
        cpu.stop()

    def finish_wait(self, task: Task) -> bool:
        """A woken sleeper back in its syscall (finish_wait): off every wait queue it was on, its
        wake value consumed.  True when the wake was the timeout (-ETIMEDOUT)."""
        timed_out = task.woken_value == -E.ETIMEDOUT
        task.woken_value = None
        for wq in task.waitqueues:
            wq.remove(task)
        task.waitqueues = []
        return timed_out

    def schedule(self, cpu: Cpu) -> None:
        """Pick the next task for ``cpu`` and switch to it (or go idle)."""
        pc = self.percpu[cpu.index]
        pc.need_resched = False
        prev = pc.curr
        preempted = prev is not None and prev.state is _RUNNABLE
        if preempted and prev is not None and not prev.allowed_on(cpu.index):
            # sched_setaffinity took this CPU away: migrate (like migration_cpu_stop)
            self._put_prev(cpu, prev, voluntary=False)
            self.enqueue(prev, self._least_loaded(prev), cpu.now)
            prev, preempted = None, False
        fair = self.fair
        while True:
            # the clock, read once per pick: nothing up to the switch-out charges the CPU
            now = cpu.now
            if fair is not None and prev is not None and not preempted:
                fair.dequeue_sleep(pc, prev, now)      # it blocked or exited: keep its lag
            nxt = self._pick_next(cpu, prev if preempted else None, now)
            if nxt is None and preempted:
                nxt = prev                  # nobody else: keep running
            if nxt is None:
                if prev is not None:
                    self._put_prev(cpu, prev, voluntary=not preempted)
                pc.curr = None
                return
            if fair is not None:
                # set_next_entity, inline: the slice it is picked for starts now
                se = nxt.__dict__.get("_fair_se") or fair.se(nxt)
                se.exec_start = now
                se.picked_deadline = se.deadline
            if nxt is prev:
                pc.curr = prev
                prev.slice_start = now
                if prev.pending is not None and not kernel_entry.restart_syscall(self.k, cpu, prev):
                    # the fair class kept a task preempted inside a syscall: the call goes on
                    # (round-robin never picks it back while another task waits); a task that slept in a
                    # syscall and was woken before it was switched out re-runs the call, not skips it
                    preempted = prev.state is _RUNNABLE
                    continue
                # exit_to_user_mode_loop: schedule() picked us again; the arch return-to-user
                # work (e.g. TIF_RISCV_V_DEFER_RESTORE) still runs before user code resumes
                kernel_entry.exit_to_user_mode(self.k, cpu, prev)
                return
            if prev is not None:
                if preempted:
                    pc.rq.append(prev)
                    prev.ready_at = now
                # _put_prev, inline: a switch is what makes an rseq critical section restart
                if prev.rseq is not None:
                    signal_rseq.rseq_preempt(prev)
                self._switch_out(cpu, prev, not preempted)
                prev = None
                preempted = False
            # (the clock only moves forward: a task ready by the time read at the top of this
            # pick is ready now, and the clock is not read again)
            if nxt.ready_at > now and nxt.ready_at > cpu.now:
                cpu.idle_until(nxt.ready_at)
                pc.last_mark = cpu.now
            self._switch_in(cpu, nxt)
            if nxt.pending is not None and not kernel_entry.restart_syscall(self.k, cpu, nxt):
                # still blocked: it went back to sleep (or, preempted again inside the syscall it
                # resumed, it stays runnable: kernel/preempt.py); pick again
                prev = nxt
                pc.curr = nxt
                preempted = nxt.state is _RUNNABLE
                continue
            kernel_entry.exit_to_user_mode(self.k, cpu, nxt)
            return

    def _pick_next(self, cpu: Cpu, curr: Task | None = None, now: int | None = None) -> Task | None:
        """The next task for ``cpu`` from its queue (``curr``: the preempted current task, which
        the fair class weighs against the queue; round-robin takes the queue's head).  ``now``:
        the CPU's clock, when the caller has read it already."""
        pc = self.percpu[cpu.index]
        fair = self.fair
        if fair is not None:
            rq = pc.rq
            while curr is not None and curr in rq:
                rq.remove(curr)             # woken again before it was switched out: it is curr
            # one walk for both of the queue's clean-ups: the runnable tasks sched_setaffinity
            # moved away (queued elsewhere before the pick) and the entries no longer runnable
            # (dropped after it; woken again later through enqueue).  The pick changes no
            # task's state, and a move queues the task on another CPU, so the walk before the
            # pick sees what one after it would.
            index = cpu.index
            moved: list[Task] | None = None
            gone: list[Task] | None = None
            for t in rq:
                if t.state is _RUNNABLE:
                    aff = t.affinity
                    if aff and index not in aff:
                        if moved is None:
                            moved = []
                        moved.append(t)
                elif gone is None:
                    gone = [t]
                else:
                    gone.append(t)
            if moved is not None:
                for t in moved:
                    rq.remove(t)            # sched_setaffinity moved it away: queue it elsewhere
                    self.enqueue(t, self._least_loaded(t), t.ready_at)
            if now is None:
                now = cpu.now
            if curr is not None:
                fair.update_curr(pc, now)
            best = fair.pick_eevdf(pc, curr)
            if gone is not None:
                for t in gone:
                    rq.remove(t)
            if best is not None and best is not curr:
                rq.remove(best)
            return best
        for _ in range(len(pc.rq)):
            t = pc.rq.popleft()
            if t.state != TaskState.RUNNABLE:
                continue
            if not t.allowed_on(cpu.index):
                self.enqueue(t, self._least_loaded(t), t.ready_at)
                continue
            return t
        return None

    def tick_preempt(self, cpu: Cpu, task: Task, used: int, slice_cycles: int) -> bool:
        """The tick's preemption test: round-robin preempts after a whole slice of ticks when
        someone waits; the fair class when the task has used the slice it was picked for."""
        pc = self.percpu[cpu.index]
        if self.fair is not None:
            return self.fair.task_tick_fair(pc, cpu.now)
        return bool(pc.rq) and used >= slice_cycles

    def yield_current(self, cpu: Cpu) -> None:
        """sched_yield's scheduler half: reschedule when someone else could run (the fair class
        first pushes the yielder's deadline: yield_task_fair)."""
        pc = self.percpu[cpu.index]
        if self.fair is not None:
            if self.fair.yield_task_fair(pc, cpu.now):
                pc.need_resched = True
        elif pc.rq:
            pc.need_resched = True

    def _put_prev(self, cpu: Cpu, prev: Task, voluntary: bool) -> None:
        """Switch ``prev`` out; a switch is what makes an rseq critical section restart."""
        if prev.rseq is not None:
            signal_rseq.rseq_preempt(prev)
        self._switch_out(cpu, prev, voluntary)

    def _switch_out(self, cpu: Cpu, prev: Task, voluntary: bool) -> None:
        """context_switch's first half: the time up to here is prev's, its pt_regs are saved
        (a task still alive), the switch is counted, and the arch's __switch_to saves what it
        must of prev's FP/vector state."""
        pc = self.percpu[cpu.index]
        self.account(cpu, prev)
        st = prev.state
        if st is _RUNNABLE or st is _BLOCKED:       # prev.alive (not the final switch of an exit)
            prev.ctx = cpu.save_context()
            if voluntary:
                prev.nvcsw += 1
            else:
                prev.nivcsw += 1
        self.k.arch.switch_from(cpu, prev)
        pc.curr = None

    def _switch_in(self, cpu: Cpu, nxt: Task) -> None:
        """context_switch: schedule() cost, switch_mm if needed, __switch_to, restore regs."""
        pc = self.percpu[cpu.index]
        k = self.k
        cost = k.cost
        mm = nxt.mm
        # schedule(), switch_mm (another mm only) and __switch_to charged as one sum: the cost
        # model's constants are never negative, and nothing before the registers are loaded
        # reads the clock, so the time is that of three charges
        cpu.charge(cost.schedule + cost.switch_to + (cost.switch_mm if cpu.mm is not mm else 0))
        cpu.attach_mm(mm)
        cpu.load_context(nxt.ctx)
        k.arch.switch_to(cpu, nxt)
        pc.curr = nxt
        pc.nr_switches += 1
        nxt.cpu = cpu.index
        # the switch itself is system time of the task switched to
        nxt.slice_start = self.account(cpu, nxt)
