"""The SMP run loop: N CPUs on one deterministic clock.

Owned by :class:`emukern.kernel.kernel.Kernel` as ``kernel.runloop``.  Each round advances the CPU whose local clock
is furthest behind (busy before idle, then lowest index), by at most ``quantum`` cycles past the
others and never past its next tick or timer, so CPUs reach shared resources in simulated-time
order.  An idle CPU jumps to its next event.  Nothing here reads host time except the wall-clock
figure reported beside the results.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from emukern.errors import EmukernError
from emukern.kernel import errno as E
from emukern.kernel.sched import TIME_MAX
from emukern.kernel.task import TaskState
from emukern.machine.cpu_base import Cpu
from emukern.machine.trap import Trap, TrapKind

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel
    from emukern.kernel.result import RunResult
from emukern.kernel import entry as kernel_entry
from emukern.kernel.tick import scheduler_tick
from emukern.kernel.result import RunResult

_NO_WORK = 1 << 80          # _pick_cpu key of a CPU with nothing to run


class StopRun(Exception):
    """Internal: the whole machine must stop (budget, deadlock, init gone)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class RunLoop:
    """The SMP run loop, owned by the kernel as ``kernel.runloop``: rounds over the CPUs on one
    clock, ticks, the run budget.  Interface: :meth:`run`, :meth:`step_loop`, :meth:`resume_trap`,
    :meth:`init_alive`, :attr:`elapsed`, :meth:`kill_everything`; it drives the kernel through
    ``self.k`` (handle_trap, the scheduler ``k.sched``, the debugger gates on the kernel)."""

    def __init__(self, k: "Kernel") -> None:
        self.k = k
        self._climit = self._cycle_limit()        # --max-cycles / --timeout, in cycles
        self._host_deadline: float | None = None
        # CPU clocks as the run loop last saw them: only the CPU a round advances changes, so each
        # round refreshes that one entry instead of reading every CPU's counter (O(N) -> O(1))
        self._clocks = [0] * k.config.cpus
        self._last_cpu: Cpu | None = None
        # (index, floor, j) from the last _lockstep_limit: the CPU it was for, the minimum of the
        # other CPUs' clocks and the first index holding it.  When the next round finds that CPU
        # is the one whose clock it refreshes, nothing else in _clocks has changed since, so the
        # minimum of all clocks and its first index follow from these without another two passes
        # over every CPU (see _round).  None: unknown.
        self._others_min: tuple[int, int, int] | None = None

    def run(self) -> "RunResult":
        if self.k.init_task is None:
            raise EmukernError("no program loaded", hint="call Kernel.load(path) first")
        t_wall = time.perf_counter()
        self._arm_host_deadline()
        try:
            self._loop()
        except StopRun as stop:
            self._halt(stop)
        self.k.wall_seconds += time.perf_counter() - t_wall
        return RunResult.from_kernel(self.k)

    def step_loop(self, max_rounds: int) -> bool:
        """Run at most ``max_rounds`` scheduler rounds; False when the machine has finished."""
        self._refresh_clocks()
        self._arm_host_deadline()
        try:
            for _ in range(max_rounds):
                if not self._round():
                    return False
        except StopRun as stop:
            self._halt(stop)
            return False
        return True

    def _halt(self, stop: StopRun) -> None:
        """The machine stops (budget, deadlock): record why and stop every task."""
        self.k.stop_reason = stop.reason
        self.k.stop_message = stop.message
        self.kill_everything()

    def _loop(self) -> None:
        self._refresh_clocks()
        while self._round():
            pass

    def _refresh_clocks(self) -> None:
        self._clocks = [c.now for c in self.k.cpus]
        self._last_cpu = None
        self._others_min = None

    def _round(self) -> bool:
        """One scheduling decision: advance the CPU that is furthest behind."""
        init = self.k.init_task
        # (init.alive first: init_alive's own first test, without its call on every round)
        if init is None or not (init.alive or self.init_alive()):
            if not self.k.stop_reason:
                self.k.stop_reason = "exited"
                left = self.k.live_tasks()
                if left:
                    # the first process is the machine's init: when it is gone the run ends
                    self.k.stop_message = (f"the first process exited while {len(left)} other task(s) "
                                         f"were still alive ({', '.join(str(t.tid) for t in left)}); "
                                         "they were stopped")
                    self.kill_everything()
            return False
        last = self._last_cpu
        om, self._others_min = self._others_min, None
        cpu = None
        if last is not None:
            li = last.index
            t = self._clocks[li] = last.now
            if om is not None and om[0] == li:
                # _pick_cpu's fast path from the last round's minimum of the others: the first
                # index at min(t, floor) -- li if t is below the floor (or equal, at a lower index)
                floor, j = om[1], om[2]
                i = li if t < floor or (t == floor and li < j) else j
                if self.k.percpu[i].curr is not None:
                    cpu = self.k.cpus[i]
        if cpu is None:
            cpu = self._pick_cpu()
        self._last_cpu = cpu
        if cpu is None:
            live = self.k.live_tasks()
            blocked = [f"{t.tid}:{t.wait_reason}" + (" forever" if t.sleeps_forever else "") for t in live]
            if live and all(t.sleeps_forever for t in live):
                raise StopRun("deadlock", "the guest sleeps forever: every task waits on a timeout "
                              "past the end of the simulated clock (2^62 cycles), which never fires "
                              f"({', '.join(blocked)})")
            raise StopRun("deadlock", "every task is blocked and no timer can wake any of them "
                          f"({', '.join(blocked)})")
        now = cpu.now
        if now >= TIME_MAX:
            cpu.stop()
            raise StopRun("budget", f"the simulated clock reached its end ({TIME_MAX:,} cycles, "
                          f"{self.k.clock.seconds(TIME_MAX) / 31_557_600:,.0f} years)")
        limit = self._climit
        pc = self.k.percpu[cpu.index]
        if pc.curr is None:
            pc.parked_trap = None
            if pc.rq:
                self.k.sched.schedule(cpu)
                return True
            target = self._idle_target(cpu)
            if limit is not None:
                target = min(target, max(limit, cpu.now + 1))   # idle up to the budget, not past
            cpu.idle_until(min(target, TIME_MAX))
            pc.last_mark = cpu.now
            pc.next_tick = self.k.clock.next_tick(cpu.now)
            self.k.sched.run_timers(cpu)
            self._check_budget(cpu)
            return True
        parked = pc.parked_trap
        if parked is not None:
            # this CPU is now the furthest behind: its parked trap may take the shared resource
            pc.parked_trap = None
            if pc.curr.alive:                   # (dropped if killed while parked)
                kernel_entry.handle_trap(self.k, cpu, parked)
            pc.sync_hint = True
        # the CPU's clock, read once (a property summing four counters): nothing below changes it
        # before cpu.run except the parked trap's handler, after which it is read again
        now = cpu.now if parked is not None else now
        until = min(pc.next_tick, self._lockstep_limit(cpu, now))
        if self.k.config.max_insns is not None:
            left = self.k.config.max_insns - sum(c.user_insns for c in self.k.cpus)
            # at most `left` more user instructions (fewer if kernel work is charged): the run
            # stops at exactly --max-insns; with nothing left the CPU does not run and
            # _check_budget ends the run after this round
            until = min(until, now + max(left, 0))
        if limit is not None:
            until = min(until, max(limit, now + 1))
        if pc.timers:
            until = min(until, pc.timers[0][0])
        if self.k.run_cap is not None:
            cap = self.k.run_cap(cpu)
            now = cpu.now                       # (a debugger callback: do not assume it left it)
            if cap is not None:
                until = min(until, cap)
        if parked is not None:
            if until > now and not pc.need_resched and pc.curr is not None \
                    and pc.curr.state is TaskState.RUNNABLE and self.k.deferred_trap is None:
                cpu.run(until)
        elif until > now:
            cpu.run(until)
        if self.k.deferred_trap is not None:
            return True                         # stopped at a trap the debugger holds
        if pc.parked_trap is not None:
            return True                         # parked at a sync point: resumed next time
        self._finish_round(cpu)
        return True

    def _finish_round(self, cpu: Cpu) -> None:
        """After a CPU ran: account, fire due timers and the tick, reschedule, check the budget.
        (Runs once per round, i.e. once per trap when CPUs contend for a lock: the calls with
        nothing to do -- no timer queued, no budget set -- are skipped by their own first test,
        made here.)"""
        k = self.k
        pc = k.percpu[cpu.index]
        curr = pc.curr
        if curr is not None:        # the time the CPU just ran is the current task's
            k.sched.account(cpu, curr)
        if pc.timers:
            k.sched.run_timers(cpu)
        if cpu.now >= pc.next_tick:
            self._timer_tick(cpu)
        curr = pc.curr
        if pc.need_resched or (curr is not None and curr.state != TaskState.RUNNABLE):
            k.sched.schedule(cpu)
        if k._dead_mms or k._to_release:
            k._reap()
        if k.config.max_insns is not None or self._climit is not None or self._host_deadline is not None:
            self._check_budget(cpu)

    def resume_trap(self) -> bool:
        """Run the handler of the trap the debugger's ``trap_gate`` deferred (outside the Unicorn
        hook, CPU stopped), then the rest of that scheduler round.  False when the machine has
        finished (like :meth:`step_loop`)."""
        if self.k.deferred_trap is None:
            return True
        cpu, trap = self.k.deferred_trap
        self.k.deferred_trap = None
        if self.k.deferred_pc is not None and cpu.get_pc() == trap.pc:
            cpu.set_pc(self.k.deferred_pc)         # as the hook saw it (unless the debugger moved it)
        self.k.deferred_pc = None
        gate, self.k.trap_gate = self.k.trap_gate, None
        try:
            kernel_entry.handle_trap(self.k, cpu, trap)
            self._finish_round(cpu)             # the tail of _round for this CPU
        except StopRun as stop:
            self._halt(stop)
            return False
        finally:
            self.k.trap_gate = gate
        return self.k.init_task is not None and self.init_alive()

    def init_alive(self) -> bool:
        init = self.k.init_task
        assert init is not None
        if init.alive:
            return True
        return any(t.tgid == init.tgid and t.alive for t in self.k.tasks.values())

    def _pick_cpu(self) -> Cpu | None:
        """The CPU furthest behind (busy before idle, then lowest index) among those with work."""
        clocks = self._clocks
        percpu = self.k.percpu
        # fast path (the common case: every CPU busy): the lowest-index CPU at the minimum clock,
        # if it has a task on it, has the smallest possible key 2 * clock -- any other CPU's key
        # is >= 2 * its clock >= 2 * min, and a tie needs the same clock at a higher index.  Two
        # C-level passes (min, index) instead of a Python-level pass over all CPUs.
        i = clocks.index(min(clocks))
        if percpu[i].curr is not None:
            return self.k.cpus[i]
        # key = 2 * clock + idle: ordered by (clock, busy first, index) like the tuple it replaces
        keys = [t + t + (p.curr is None) if p.curr is not None or p.rq or p.timers else _NO_WORK
                for t, p in zip(self._clocks, self.k.percpu)]
        m = min(keys)
        return None if m == _NO_WORK else self.k.cpus[keys.index(m)]

    def _idle_target(self, cpu: Cpu) -> int:
        pc = self.k.percpu[cpu.index]
        cands = [pc.timers[0][0]] if pc.timers else []
        cands += [t for t, p in zip(self._clocks, self.k.percpu) if p is not pc and p.curr is not None]
        cands += [t.ready_at for t in pc.rq]
        target = min(cands) if cands else cpu.now
        return max(target, cpu.now + 1) if not pc.rq else max(target, cpu.now)

    def _lockstep_limit(self, cpu: Cpu, now: int | None = None) -> int:
        """How far ``cpu`` (at local time ``now``, read here when not given) may run past the
        other busy CPUs' minimum clock; sets ``Kernel.sync_floor`` to that minimum."""
        if now is None:
            now = cpu.now
        clocks = self._clocks
        if len(clocks) == 1:
            self.k.sync_floor = TIME_MAX          # no other CPU: no floor (as the scan below finds)
            return TIME_MAX
        me = self.k.percpu[cpu.index]
        idx = cpu.index
        # fast path: the minimum clock of the other CPUs (this one masked out for a moment);
        # if the first CPU at that clock has work it is the floor the full scan below would
        # find (the floor is a value: which CPU holds it does not matter)
        own = clocks[idx]
        clocks[idx] = _NO_WORK
        floor = min(clocks)
        j = clocks.index(floor)
        clocks[idx] = own
        self._others_min = (idx, floor, j)      # for the next round's pick (see _round)
        p = self.k.percpu[j]
        if p.curr is not None or p.rq:
            return self._lockstep_from(now, me, floor)
        others = [t for t, p in zip(self._clocks, self.k.percpu) if p is not me and (p.curr is not None or p.rq)]
        if not others:
            self.k.sync_floor = TIME_MAX
            return TIME_MAX
        return self._lockstep_from(now, me, min(others))

    def _lockstep_from(self, now: int, me: Any, floor: int) -> int:
        """:meth:`_lockstep_limit` once the floor (the others' minimum clock) is known."""
        self.k.sync_floor = floor
        if me.sync_hint:
            # it keeps taking a shared lock: run only up to where the others are, so its next
            # acquisition happens inside the hook instead of being parked and re-delivered
            if now > floor:
                return now                  # already ahead (a parked trap just ran): no run now
            me.sync_hint = False
            return max(floor, now + 1)
        return max(floor, now) + self.k.config.quantum

    def _timer_tick(self, cpu: Cpu) -> None:
        """The per-CPU timer interrupt taken between two user instructions: the one
        scheduler_tick (kernel/tick.py), then the way back to user mode."""
        k = self.k
        task = k.percpu[cpu.index].curr
        got = scheduler_tick(k, cpu, task)
        if got is None or task is None:
            return
        trap, t0 = got
        if not k.percpu[cpu.index].need_resched:
            kernel_entry.exit_to_user_mode(k, cpu, task)
        trap.cycles = cpu.now - t0
        k.log_trap(cpu, task, trap)
        for cb in k.trap_listeners:
            cb("exit", cpu, task, trap)
        k.sched.account(cpu, task)

    def _cycle_limit(self) -> int | None:
        """The simulated-time budget in cycles (--max-cycles, --timeout), kernel work included."""
        cfg = self.k.config
        lims = []
        if cfg.max_cycles is not None:
            lims.append(cfg.max_cycles)
        if cfg.timeout is not None:
            lims.append(max(1, round(cfg.timeout * cfg.freq_hz)))
        return min(lims) if lims else None

    def _arm_host_deadline(self) -> None:
        if self.k.config.host_timeout is not None and self._host_deadline is None:
            self._host_deadline = time.perf_counter() + self.k.config.host_timeout

    def _check_budget(self, cpu: Cpu) -> None:
        limit = self.k.config.max_insns
        if limit is not None and sum(c.user_insns for c in self.k.cpus) >= limit:
            cpu.stop()
            raise StopRun("budget", f"the --max-insns budget of {limit:,} user instructions ran out; "
                          "the guest may be stuck in a loop — raise --max-insns if it is just long")
        climit = self._climit
        if climit is not None and cpu.now >= climit:
            cpu.stop()
            cfg = self.k.config
            what = (f"--timeout {cfg.timeout:g} s" if cfg.timeout is not None and
                    round(cfg.timeout * cfg.freq_hz) == climit else "--max-cycles")
            raise StopRun("budget", f"stopped at {cpu.now:,} cycles ({self.k.clock.seconds(cpu.now):.6g} s) of "
                          f"simulated time, kernel work included ({what}); raise it if the guest is just long")
        deadline = self._host_deadline
        if deadline is not None and time.perf_counter() >= deadline:
            cpu.stop()
            raise StopRun("budget", f"stopped after {self.k.config.host_timeout:g} host seconds "
                          f"(--host-timeout) at {self.elapsed:,} simulated cycles")

    def kill_everything(self) -> None:
        for t in list(self.k.tasks.values()):
            if t.alive:
                t.state = TaskState.DEAD
                t.exit_code = E.SIGKILL

    @property
    def elapsed(self) -> int:
        return max(c.now for c in self.k.cpus)
