"""Generating signals — mirrors kernel/signal.c: __send_signal_locked, prepare_signal,
complete_signal, signal_wake_up, force_sig_info; kill/tkill/tgkill/rt_sigqueueinfo; SIGCHLD to
the parent (do_notify_parent)."""
from __future__ import annotations

from emukern.kernel.files import WaitQueue

from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.kernel import pid as kpid
from emukern.kernel.signal.defs import *            # noqa: F401,F403  (the uapi numbers)
from emukern.kernel.signal.defs import _mask        # noqa: F401
from emukern.kernel.signal.state import *           # noqa: F401,F403

from emukern.kernel.task import Task, TaskState      # noqa: F401
from emukern.kernel.thread_info import TIF_SIGPENDING
from emukern.kernel import errno as E
from emukern.kernel.signal import base as signal_base
from emukern.kernel.signal import jobctl as signal_jobctl
from emukern.kernel.signal.defs import NSIG
from emukern.kernel.signal.defs import SIGCONT
from emukern.kernel.signal.defs import SIGKILL
from emukern.kernel.signal.defs import SIG_WAKE
from emukern.kernel.signal.defs import SIGRTMIN
from emukern.kernel.signal.defs import SIG_DFL
from emukern.kernel.signal.defs import SIG_IGN
from emukern.kernel.signal.defs import SIG_KERNEL_STOP
from emukern.kernel.signal.defs import SIG_WAKE
from emukern.kernel.signal.defs import SI_TKILL
from emukern.kernel.signal.defs import SI_USER
from emukern.kernel.signal.defs import sigmask
from emukern.kernel.signal.state import KSigInfo
from emukern.kernel.signal.state import init_task_signals
from emukern.kernel.cred import cred_of
from emukern.kernel.resource import rlimit

RLIMIT_SIGPENDING = 11
from emukern.kernel.task import Task
from emukern.kernel.task import TaskState
from emukern.kernel.thread_info import TIF_SIGPENDING
from emukern.machine.cpu_base import Cpu
from emukern.machine.trap import Trap
from typing import Any
from emukern.disasm import disasm_one
from emukern.kernel import signal as S
from emukern.machine.memory import MemoryFault
if TYPE_CHECKING:
    from emukern.kernel.types import Kernel
    from emukern.machine.cpu_base import Cpu
    from emukern.machine.trap import Trap

_BLOCKED = TaskState.BLOCKED
_STOP_CONT_KILL = SIG_KERNEL_STOP | _mask(SIGCONT, SIGKILL)     # what prepare_signal acts on

if TYPE_CHECKING:
    from emukern.machine.cpu_base import Cpu
    from emukern.machine.trap import Trap


# ---- generation -----------------------------------------------------------------------------
def send_signal(k: "Kernel", cpu: "Cpu", t: Task, info: KSigInfo, group: bool) -> int:
    """__send_signal_locked: queue ``info`` for the thread (``group`` False: tkill, faults) or
    the process (kill), then complete_signal.  Returns 0 (a dropped signal is no error)."""
    sig = info.signo
    if t.sighand is None:
        init_task_signals(t)
    if not prepare_signal(k, cpu, t, sig):
        return 0
    pending = t.signal.shared_pending if group else t.sigstate.pending
    if sig < SIGRTMIN and pending.signal & (1 << (sig - 1)):
        return 0                    # legacy signals do not queue twice
    if (sig >= SIGRTMIN or info.code < 0) and sig != SIGKILL and info.timerid is None \
            and sigpending_full(k, t):
        # __sigqueue_alloc refused (RLIMIT_SIGPENDING): a real-time signal sent with its own
        # data (sigqueue, tkill, ...) fails; otherwise it goes as a bare bit, its siginfo lost
        if sig >= SIGRTMIN and info.code != SI_USER:
            return -E.EAGAIN
        pending.signal |= 1 << (sig - 1)
        complete_signal(k, cpu, t, sig, group)
        return 0
    pending.add(info)
    complete_signal(k, cpu, t, sig, group)
    return 0


def sigpending_full(k: "Kernel", t: Task) -> bool:
    """Would one more queued siginfo for ``t`` pass its RLIMIT_SIGPENDING?  Linux counts every
    siginfo allocated for the receiver's user (ucounts): the ones queued on its tasks, and the
    one each of the user's posix timers holds from timer_create to timer_delete (sigqueue_alloc
    with SIGQUEUE_PREALLOC, counted while the timer exists, whether its signal is queued or
    not: a queued timer signal is its timer's own siginfo, counted once).  emukern counts them
    when a signal that may be refused is sent (real-time, or carrying its own data): kill's
    signals are always queued (override_rlimit) and a timer's expiry uses the siginfo it already
    holds, so neither is checked."""
    limit = rlimit(k, t, RLIMIT_SIGPENDING)
    uid = cred_of(t).uid
    queued, groups = 0, set()
    for x in k.tasks.values():
        if not x.alive or x.sigstate is None or cred_of(x).uid != uid:
            continue
        queued += sum(1 for i in x.sigstate.pending.queue if i.timerid is None)
        if x.signal is not None and id(x.signal) not in groups:
            groups.add(id(x.signal))
            queued += sum(1 for i in x.signal.shared_pending.queue if i.timerid is None)
            queued += len(getattr(x.signal, "posix_timers", ()))
        if queued >= limit:
            return True
    return False


def prepare_signal(k: "Kernel", cpu: "Cpu", t: Task, sig: int) -> bool:
    """SIGCONT discards pending stop signals and stop signals discard a pending SIGCONT
    (whatever the actions); then an ignored signal is dropped."""
    m = 1 << (sig - 1)
    if not m & _STOP_CONT_KILL:
        if t.sighand.action[sig].handler > SIG_IGN:
            return True             # a user handler: never ignored (kill's common case)
        return not signal_base.sig_ignored(k, t, sig)
    group = signal_base._threads(k, t) or [t]
    if sig == SIGCONT or sig == SIGKILL:
        signal_jobctl.do_signal_continue(k, cpu, t, sig)
    if m & SIG_KERNEL_STOP:
        for th in group:
            th.sigstate.pending.flush(sigmask(SIGCONT))
        t.signal.shared_pending.flush(sigmask(SIGCONT))
    if sig == SIGCONT:
        for th in group:
            th.sigstate.pending.flush(SIG_KERNEL_STOP)
        t.signal.shared_pending.flush(SIG_KERNEL_STOP)
    return not signal_base.sig_ignored(k, t, sig)


# ---- signalfd's hook (include/linux/signalfd.h): readers sleep on the sighand's queue ------
def signalfd_wqh(sighand: Any) -> "WaitQueue":
    wq = getattr(sighand, "signalfd_wqh", None)
    if wq is None:
        wq = WaitQueue("signalfd")
        sighand.signalfd_wqh = wq
    return wq


def signalfd_notify(k: Any, cpu: Any, task: Any) -> None:
    """signalfd_notify: a signal was queued for ``task``: wake the signalfd waiters."""
    wq = getattr(task.sighand, "signalfd_wqh", None)
    if wq is not None and wq.waiters:
        k.sched.wake_queue(wq, cpu.now)


def complete_signal(k: "Kernel", cpu: "Cpu", p: Task, sig: int, group: bool) -> None:
    """Pick a thread that does not block the signal (the target first) and wake it."""
    signalfd_notify(k, cpu, p)   # __send_signal_locked's signalfd_notify: wake signalfd readers
    m = 1 << (sig - 1)
    target = None
    if p.alive and not p.sigstate.blocked & m:      # wants(p), inline
        target = p
    elif group:
        def wants(t: Task) -> bool:
            return t.alive and not t.sigstate.blocked & m
        target = next((t for t in sorted(signal_base._threads(k, p), key=lambda x: x.tid) if wants(t)), None)
    if sig == SIGKILL:
        target = p                  # SIGKILL cannot be blocked
        if p.state is TaskState.RUNNABLE and p.pending is not None and p.woken_value is None:
            # woken from a wait but not yet back in it (a wake that left no value: the queue it
            # slept on moved): the re-run must see the kill, as Linux's wait loops test
            # fatal_signal_pending before sleeping again, or it sleeps on with SIGKILL pending
            p.woken_value = SIG_WAKE
    if target is None:
        for t in signal_base._threads(k, p) if group else [p]:
            signal_base.recalc_sigpending(k, t)
        return
    # signal_wake_up sets TIF_SIGPENDING outright, as Linux's does: the target does not block
    # the signal just queued where it sees it, so recalc_sigpending could only say "set"
    target.flags |= TIF_SIGPENDING
    signal_wake_up(k, cpu, target)


def signal_wake_up(k: "Kernel", cpu: "Cpu", t: Task) -> None:
    """TIF_SIGPENDING + wake an interruptible sleeper, or kick the CPU it runs on.  A stopped
    task stays stopped (only SIGCONT and SIGKILL resume it, in prepare_signal)."""
    if not t.flags & TIF_SIGPENDING:
        return
    if t.state is _BLOCKED:
        if t.wait_reason.startswith("stopped"):
            return
        if t.wait_reason.startswith("traced"):
            from emukern.kernel.signal.ptrace import ptrace_signal_wake_up
            ptrace_signal_wake_up(k, cpu, t)     # a ptrace-stop ends for SIGKILL only
            return
    elif k.percpu[cpu.index].curr is t:
        return      # the sender itself: it sees TIF_SIGPENDING on its own way out (no kick)
    signal_wake_up_state(k, cpu, t)


def signal_wake_up_state(k: "Kernel", cpu: "Cpu", t: Task) -> None:
    """Make ``t`` reach its return to user mode soon (interrupt a sleep, kick its CPU)."""
    if t.state is TaskState.BLOCKED and not t.wait_reason.startswith(("stopped", "traced")):
        for wq in t.waitqueues:
            wq.remove(t)
        t.waitqueues = []
        k.sched.wake_up(t, cpu.now, SIG_WAKE)
        return
    for pc in k.percpu:
        if pc.curr is t and pc.index != cpu.index:
            pc.need_resched = True                      # the IPI: it enters the kernel soon
            k.cpus[pc.index].stop()


def force_sig_info(k: "Kernel", cpu: "Cpu", t: Task, info: KSigInfo) -> None:
    """force_sig_info_to_task: a fault's signal cannot be blocked or ignored — if it is, the
    mask bit is cleared and the action reset to SIG_DFL, so the task dies as Linux's does."""
    if t.sighand is None:
        init_task_signals(t)
    sig = info.signo
    ka = t.sighand.action[sig]
    blocked = bool(t.sigstate.blocked & sigmask(sig))
    if blocked or ka.handler == SIG_IGN:
        ka.handler = SIG_DFL if (blocked or ka.handler == SIG_IGN) else ka.handler
        if blocked:
            t.sigstate.blocked &= ~sigmask(sig)
    if ka.handler == SIG_DFL:
        t.signal.group_exit = False
    pending = t.sigstate.pending
    if not pending.signal & sigmask(sig):
        pending.add(info)
    signal_base.recalc_sigpending(k, t)
    signal_wake_up(k, cpu, t)


def force_sig_fault(k: "Kernel", cpu: "Cpu", task: Task, sig: int, code: int, addr: int | None,
                    trap: "Trap | None", report: dict[str, Any] | None) -> None:
    """arm64_force_sig_fault / force_sig_fault: the faulting instruction is where user mode
    resumes (the frame's pc), and on arm64 the fault address and ESR go into the frame."""
    if trap is not None:
        cpu.set_pc(trap.pc)
        k.arch.record_fault(task, addr, trap)     # arm64: the frame's fault address and ESR
    force_sig_info(k, cpu, task, KSigInfo(sig, code, addr=addr, report=report))


# ---- syscalls: sending -----------------------------------------------------------------------
def _processes(k: "Kernel") -> list[Task]:
    return sorted((t for t in k.tasks.values() if t.is_thread_leader and t.alive
                   or t.is_thread_leader and any(x.alive for x in k.tasks.values() if x.tgid == t.tgid)),
                  key=lambda t: t.tid)


def _group_target(k: "Kernel", t: Task) -> Task | None:
    leader = k.tasks.get(t.tgid)
    if leader is not None and leader.alive:
        return leader
    return next((x for x in signal_base._threads(k, t)), None)


def _kill_info(k: "Kernel", task: Task, sig: int, code: int = SI_USER, to: Task | None = None) -> KSigInfo:
    """The siginfo of kill/tkill: si_pid is the sender as the receiver's pid namespace sees it
    (0 when it cannot: a sender in a parent namespace)."""
    pid = task.tgid
    if to is not None and (to.pid_ns is not None or task.pid_ns is not None):
        pid = kpid.task_tgid_nr_ns(k, task, kpid.task_active_pid_ns(k, to))
    return KSigInfo(sig, code, 0, pid, 0)        # signo, code, errno, pid, uid


def _tkill(k: "Kernel", cpu, task, tgid: int, tid: int, sig: int) -> int:
    signal_base._sig_init(k, task)
    cpu.charge(k.cost.syscall_body)
    if tid <= 0 or not 0 <= sig <= NSIG:
        return -E.EINVAL
    t = kpid.find_task_by_vpid(k, task, tid)
    if t is None or not t.alive or (tgid > 0 and kpid.task_tgid_vnr(k, t, task) != tgid):
        return -E.ESRCH
    return send_signal(k, cpu, t, _kill_info(k, task, sig, SI_TKILL, to=t), False) if sig else 0


def force_sig(k: "Kernel", cpu: Cpu, task: Task, sig: int, trap: Trap | None, why: str,
              bus_code: int | None = None) -> None:
    """A signal the kernel raises for ``task`` (a fault, SIGPIPE).  A trap's signal is forced
    (force_sig_fault: it cannot be blocked or ignored) and goes to the handler if one is
    installed; otherwise it takes its default action on the way back to user mode.  The
    report below is what the run summary shows if the signal kills the task."""
    report: dict[str, Any] = {"signal": sig, "signame": S.signal_name(sig), "tid": task.tid,
                              "why": why}
    if trap is None:
        # send_sig(SIGPIPE, current): an ordinary thread-directed signal (si_code SI_USER)
        send_signal(k, cpu, task, S.KSigInfo(sig, S.SI_USER, pid=task.tgid, report=report), False)
        return
    report["pc"] = trap.pc
    report["insn"] = trap.insn
    report["syndrome"] = trap.syndrome()
    try:
        code = task.mm.read(trap.pc, 4, "x")
    except MemoryFault:               # the PC is not in executable memory: nothing to show
        report["disasm"] = "<unreadable>"
    else:
        report["disasm"] = disasm_one(k.config.arch, code, trap.pc)
    if trap.addr is not None:
        report["addr"] = trap.addr
    if trap.detail:
        report["detail"] = trap.detail
    if sig == S.SIGSEGV:
        mapped = trap.addr is not None and task.mm.find(trap.addr) is not None
        si_code, addr = (S.SEGV_ACCERR if mapped else S.SEGV_MAPERR), trap.addr
    elif sig == S.SIGBUS:
        # an alignment fault unless the caller says which bus error (BUS_ADRERR: no such page)
        si_code, addr = (S.BUS_ADRALN if bus_code is None else bus_code), trap.addr
    elif sig == S.SIGTRAP:
        si_code, addr = S.TRAP_BRKPT, trap.pc
    else:
        si_code, addr = S.ILL_ILLOPC, trap.pc
    ka = task.sighand.action[sig] if task.sighand is not None else None
    caught = ka is not None and ka.handler not in (S.SIG_DFL, S.SIG_IGN) \
        and not task.sigstate.blocked & S.sigmask(sig)
    trap.decision = (f"{report['signame']} ({why}) to the handler at {ka.handler:#x}" if caught and ka
                     else f"{report['signame']}: {why}")
    force_sig_fault(k, cpu, task, sig, si_code, addr, trap, report)
