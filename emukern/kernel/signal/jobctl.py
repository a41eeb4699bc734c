"""Job control — mirrors do_signal_stop / do_signal_continue (kernel/signal.c): group stop,
SIGCONT, orphaned process groups."""
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


class JobControl(SignalBase):
    """Group stop and continue."""

    # ---- job control: group stop and continue ------------------------------------------------
    def is_current_pgrp_orphaned(self, task: Task) -> bool:
        """A process group is orphaned when no member has a parent in another group of the same
        session (emukern's first process has no parent: its group is orphaned)."""
        pgid = task.signal.pgid
        for p in self._processes():
            if p.signal is None or p.signal.pgid != pgid:
                continue
            par = p.parent
            if par is not None and par.signal is not None and par.signal.pgid != pgid \
                    and par.signal.sid == p.signal.sid:
                return False
        return True

    def do_signal_stop(self, cpu: "Cpu", task: Task, sig: int, trap: "Trap | None") -> None:
        """The group stops: every thread parks (TASK_STOPPED, shown as blocked 'stopped') at its
        next return to user mode until SIGCONT or SIGKILL.  (No CLD_STOPPED report to the
        parent: wait4's WUNTRACED is not modelled.)"""
        sigs = task.signal
        if not sigs.stop_pending:
            sigs.stop_pending = sig
            for t in self._threads(task):
                if t is not task:
                    t.sigpending = True
                    self.signal_wake_up_state(cpu, t)
        self._log_signal(cpu, task, f"{signal_name(sig)}: group stop (the thread parks until SIGCONT)", trap)
        sigs.stopped = True
        task.waitqueues = []                                    # type: ignore[attr-defined]
        self.block_current(cpu, task, f"stopped ({signal_name(sig)})")   # type: ignore[attr-defined]

    def signal_wake_up_state(self, cpu: "Cpu", t: Task) -> None:
        """Make ``t`` reach its return to user mode soon (interrupt a sleep, kick its CPU)."""
        if t.state is TaskState.BLOCKED and not t.wait_reason.startswith("stopped"):
            for wq in getattr(t, "waitqueues", []):
                wq.remove(t)
            t.waitqueues = []                                   # type: ignore[attr-defined]
            self.wake_up(t, cpu.now, SIG_WAKE)                  # type: ignore[attr-defined]
            return
        for pc in self.percpu:
            if pc.curr is t and pc.index != cpu.index:
                pc.need_resched = True
                self.cpus[pc.index].stop()

    def do_signal_continue(self, cpu: "Cpu", t: Task) -> None:
        sigs = t.signal
        if not sigs.stop_pending and not sigs.stopped:
            return
        sigs.stop_pending = 0
        sigs.stopped = False
        for th in self._threads(t):
            if th.state is TaskState.BLOCKED and th.wait_reason.startswith("stopped"):
                self.wake_up(th, cpu.now)                       # type: ignore[attr-defined]
