"""The timer interrupt: one ``scheduler_tick`` for both places it lands (kernel/sched/core.c's
sched_tick, reached from the arch's timer interrupt).

Between two user instructions the run loop (kernel/smp.py) takes it and then returns to user
mode; inside a long syscall a preemption point (kernel/preempt.py) takes it and the interrupt
returns into the kernel loop.  The work is the same: count the tick, charge it, run the interval
timers (ITIMER_VIRTUAL/PROF), and test the time slice.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel.signal import timers as signal_timers
from emukern.machine.trap import Trap, TrapKind

if TYPE_CHECKING:
    from emukern.kernel.task import Task
    from emukern.kernel.types import Kernel
    from emukern.machine.cpu_base import Cpu


def scheduler_tick(k: "Kernel", cpu: "Cpu", task: "Task | None", in_kernel: str | None = None) -> "tuple[Trap, int] | None":
    """Take the tick whose deadline has passed on ``cpu``: returns the TIMER trap (its decision
    made, its cycles not yet set: the caller logs it) and the time it began, or None on an idle CPU.  ``in_kernel``
    names the kernel loop the tick interrupted (None: user mode).  The slice is measured to the
    tick's deadline in the kernel (nothing of the return to user runs there) and to now in user
    mode (the tick's own cost included, as the interrupt returns through exit_to_user_mode)."""
    pc = k.percpu[cpu.index]
    deadline = pc.next_tick
    pc.ticks += 1
    pc.next_tick = k.clock.next_tick(cpu.now)
    if task is None:
        return None
    trap = Trap(TrapKind.TIMER, k.config.arch, cpu.get_pc(), cpu=cpu.index, cause=k.arch.timer_cause)
    t0 = cpu.now
    cpu.charge(k.cost.timer_tick)
    k._trap_counts["timer"] += 1    # (the raw Counter: the trap_counts property folds the table first)
    if in_kernel is None:
        for cb in k.trap_listeners:
            cb("enter", cpu, task, trap)
    trap.handler = "scheduler_tick"
    signal_timers.itimer_tick(k, cpu, task)       # ITIMER_VIRTUAL/PROF (PROF counts system time too)
    slice_cycles = k.clock.tick_cycles * k.config.timeslice_ticks
    used = (deadline if in_kernel is not None else cpu.now) - task.slice_start
    if k.sched.tick_preempt(cpu, task, used, slice_cycles):
        pc.need_resched = True
        trap.decision = (f"in the kernel ({in_kernel}): time slice used up: TIF_NEED_RESCHED"
                         if in_kernel is not None else "time slice used up: preempt")
    else:
        trap.decision = f"in the kernel ({in_kernel}): continue" if in_kernel is not None else "continue"
    return trap, t0
