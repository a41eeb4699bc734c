"""What every part of the signal code shares: the Kernel attributes it uses, the thread-group
helpers, TIF_SIGPENDING (recalc_sigpending) and sig_ignored."""
from __future__ import annotations

from typing import Any

from emukern.kernel.signal.defs import *            # noqa: F401,F403
from emukern.kernel.signal.state import *           # noqa: F401,F403
from emukern.kernel.task import Task


class SignalBase:
    """The signal half of the kernel, part by part (state lives on tasks; see the package
    docstring)."""

    tasks: dict
    percpu: list
    cpus: list
    config: Any
    cost: Any
    clock: Any
    arch: Any
    _in_handler = False

    # ---- helpers --------------------------------------------------------------------------------
    def _threads(self, task: Task) -> list[Task]:
        return [t for t in self.tasks.values() if t.tgid == task.tgid and t.alive]

    def recalc_sigpending(self, t: Task) -> None:
        st = t.sigstate
        t.sigpending = bool((st.pending.signal | t.signal.shared_pending.signal) & ~st.blocked)

    def sig_ignored(self, t: Task, sig: int) -> bool:
        """sig_ignored: a blocked signal is always queued (the action may change before it is
        unblocked); otherwise SIG_IGN or a default action of 'ignore' drops it at once."""
        m = 1 << (sig - 1)                              # sigmask(sig)
        if t.sigstate.blocked & m:
            return False
        h = t.sighand.action[sig].handler
        return h == SIG_IGN or (h == SIG_DFL and bool(m & SIG_KERNEL_IGNORE))

    def _sig_init(self, task: Task) -> TaskSig:
        if task.sighand is None:
            init_task_signals(task)
        return task.sigstate
