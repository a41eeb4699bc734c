"""What every part of the signal code shares: the Kernel attributes it uses, the thread-group
helpers, TIF_SIGPENDING (recalc_sigpending) and sig_ignored."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from emukern.kernel.signal.defs import *            # noqa: F401,F403
from emukern.kernel.signal.state import *           # noqa: F401,F403
from emukern.kernel.task import Task
from emukern.kernel import pid as kpid
from emukern.kernel.uapi import _s32
from emukern.kernel.thread_info import TIF_SIGPENDING
from emukern.kernel.signal.defs import SIG_DFL
from emukern.kernel.signal.defs import SIG_IGN
from emukern.kernel.signal.defs import SIG_KERNEL_IGNORE
from emukern.kernel.signal.state import TaskSig
from emukern.kernel.signal.state import init_task_signals
from emukern.kernel.task import Task
from emukern.kernel.thread_info import TIF_SIGPENDING
if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


# ---- helpers --------------------------------------------------------------------------------
def _threads(k: "Kernel", task: Task) -> list[Task]:
    return [t for t in k.tasks.values() if t.tgid == task.tgid and t.alive]


def recalc_sigpending(k: "Kernel", t: Task) -> None:
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


def sig_ignored(k: "Kernel", t: Task, sig: int) -> bool:
    """sig_ignored: a blocked signal is always queued (the action may change before it is
    unblocked); otherwise SIG_IGN or a default action of 'ignore' drops it at once."""
    m = 1 << (sig - 1)                              # sigmask(sig)
    if t.sigstate.blocked & m:
        return False
    h = t.sighand.action[sig].handler
    return h == SIG_IGN or (h == SIG_DFL and bool(m & SIG_KERNEL_IGNORE))


def _sig_init(k: "Kernel", task: Task) -> TaskSig:
    if task.sighand is None:
        init_task_signals(task)
    return task.sigstate


# ---- the thread group's leader and its signal_struct (process group, session) -------------
def _leader(k: "Kernel", task: Any) -> Any:
    return k.tasks.get(task.tgid, task)


def _pid_target(k: "Kernel", task: Any, pid: int) -> Any:
    pid = _s32(pid)
    if pid < 0:
        return None
    t = _leader(k, task) if pid == 0 else kpid.find_task_by_vpid(k, task, pid)
    return t if t is not None and t.alive and t.is_thread_leader else None


# the process group and session live in the thread group's signal_struct (kernel/signal.py),
# where kill(-pgid) and job control find them; fork copies them
def _signal_struct(k: "Kernel", t: Any) -> Any:
    leader = _leader(k, t)
    if leader.signal is None:
        _sig_init(k, leader)
    return leader.signal


def pgid_of(k: "Kernel", t: Any) -> int:
    return _signal_struct(k, t).pgid


def sid_of(k: "Kernel", t: Any) -> int:
    return _signal_struct(k, t).sid
