"""What every part of the signal code shares: the Kernel attributes it uses, the thread-group
helpers, TIF_SIGPENDING (recalc_sigpending) and sig_ignored."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from emukern.kernel.signal.defs import *            # noqa: F401,F403
from emukern.kernel.signal.state import *           # noqa: F401,F403
from emukern.kernel.task import Task
from emukern.kernel.thread_info import TIF_SIGPENDING


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
    signal_listeners: list[Callable[..., None]]       # Kernel: callbacks told of each delivery
    syscall_notes: list[str]                         # Kernel.do_syscall adds them to its trap
    child_wait: dict[int, Any]                       # SyscallsMixin: tgid -> its wait4 sleepers
    _to_release: list[Task]                          # SyscallsMixin: reaped, to release_task
    fault_report: dict[str, Any] | None              # Kernel: the fatal signal's report
    _seq: int                                        # Kernel: timer sequence numbers
    sched: Any                                       # Kernel.sched (kernel/sched.py Scheduler)

    if TYPE_CHECKING:       # what the signal code calls on the rest of the kernel
        def block_current(self, cpu: Any, task: Task, why: str) -> None: ...
        def wake_up(self, task: Task, now: int, how: Any = None) -> None: ...
        def wake_queue(self, wq: Any, now: int) -> None: ...
        def add_timer(self, task: Task, wake_at: int) -> None: ...
        def account(self, cpu: Any, task: Task) -> None: ...
        def syscall_name(self, nr: int) -> str: ...
        def do_group_exit(self, cpu: Any, task: Task, code: int, signaled: bool = False) -> None: ...
        def core_dump_written(self, task: Task, sig: int) -> bool: ...
        def _log_trap(self, cpu: Any, task: Task, trap: Any) -> None: ...

    # ---- helpers --------------------------------------------------------------------------------
    def _threads(self, task: Task) -> list[Task]:
        return [t for t in self.tasks.values() if t.tgid == task.tgid and t.alive]

    def recalc_sigpending(self, t: Task) -> None:
        """TIF_SIGPENDING from the sets, as recalc_sigpending_tsk: set while a pending signal is
        not blocked.  It runs on every kill, delivery and sigreturn, so the flag word is written
        directly (not through the ``sigpending`` view)."""
        st = t.sigstate
        sigs = t.signal
        # (a CLD_* report for the parent also keeps it: the thread must reach do_signal)
        if (st.pending.signal | sigs.shared_pending.signal) & ~st.blocked or sigs.cld_notify:
            t.flags |= TIF_SIGPENDING
        else:
            t.flags &= ~TIF_SIGPENDING

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
