"""The signal state Linux keeps (sighand_struct, signal_struct, the per-thread part of
task_struct, kernel_siginfo, sigpending), the alternate-stack rules, what clone and exec do
to it, and the timer-list entries and trap-log events of signals."""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

from emukern.kernel.signal.defs import *            # noqa: F401,F403
from emukern.kernel.task import Task

@dataclass
class SigAction:
    handler: int = SIG_DFL
    flags: int = 0
    restorer: int = 0
    mask: int = 0


@dataclass
class SigHand:
    """sighand_struct: one action per signal, shared by CLONE_SIGHAND threads."""
    action: list[SigAction] = field(default_factory=lambda: [SigAction() for _ in range(NSIG + 1)])

    def copy(self) -> "SigHand":
        return SigHand([SigAction(a.handler, a.flags, a.restorer, a.mask) for a in self.action])


# siginfo layouts (asm-generic/siginfo.h, 64-bit): si_signo, si_errno, si_code, then the union at 16
_SI_HEAD = struct.Struct("<iii")
_SI_U64 = struct.Struct("<Q")                   # _sigfault.si_addr
_SI_TIMER = struct.Struct("<iIQ")               # _timer: si_tid, si_overrun, si_value
_SI_CHLD = struct.Struct("<iIi4xQQ")            # _sigchld: si_pid, si_uid, si_status, si_utime, si_stime
_SI_RT = struct.Struct("<iIQ")                  # _rt: si_pid, si_uid, si_value
_SI_KILLINFO = struct.Struct("<iii4xiI")        # the head, then _kill: si_pid, si_uid
_SI_KILL_PAD = bytes(128 - _SI_KILLINFO.size)


@dataclass(slots=True)
class KSigInfo:
    """kernel_siginfo: what copy_siginfo_to_user writes (the 128-byte siginfo of 64-bit ABIs)."""
    signo: int
    code: int = SI_USER
    errno: int = 0
    pid: int = 0
    uid: int = 0
    addr: int | None = None          # _sigfault
    status: int | None = None        # _sigchld
    utime: int = 0
    stime: int = 0
    value: int | None = None         # _rt / _timer sigval
    timerid: int | None = None
    overrun: int = 0
    report: dict[str, Any] | None = None    # emukern: the fault report if this signal kills
    raw: bytes | None = None         # rt_(tg)sigqueueinfo: the sender's own siginfo, passed on as is

    def to_bytes(self) -> bytes:
        if self.addr is None and self.timerid is None and self.status is None and self.value is None:
            return _SI_KILLINFO.pack(self.signo, self.errno, self.code, self.pid, self.uid) + _SI_KILL_PAD
        b = bytearray(128)
        self.pack_into(b, 0)
        return bytes(b)

    def pack_into(self, b: bytearray, off: int) -> None:
        """copy_siginfo_to_user into a frame being built: the 128 bytes at ``off`` of ``b``, which
        are zero (only the fields the layout of this si_code has are written)."""
        if self.addr is None and self.timerid is None and self.status is None and self.value is None:
            _SI_KILLINFO.pack_into(b, off, self.signo, self.errno, self.code, self.pid, self.uid)
            return                      # _kill: kill, tkill, the kernel's own signals
        b = memoryview(b)[off:off + 128]
        if self.raw is not None:
            # a queued siginfo from user space is delivered as the sender wrote it (only the
            # kernel_siginfo part: what lies beyond it reads as zero), with the signal number
            # the call named
            b[0:len(self.raw)] = self.raw
            _SI_HEAD.pack_into(b, 0, self.signo, self.errno, self.code)
            return
        _SI_HEAD.pack_into(b, 0, self.signo, self.errno, self.code)
        if self.addr is not None:
            _SI_U64.pack_into(b, 16, self.addr & (2**64 - 1))
        elif self.timerid is not None:
            _SI_TIMER.pack_into(b, 16, self.timerid, self.overrun, (self.value or 0) & (2**64 - 1))
        elif self.status is not None:
            _SI_CHLD.pack_into(b, 16, self.pid, self.uid, self.status, self.utime, self.stime)
        elif self.value is not None:
            _SI_RT.pack_into(b, 16, self.pid, self.uid, self.value & (2**64 - 1))


@dataclass
class SigPending:
    """struct sigpending: a bit per pending signal plus the queue of their siginfo."""
    signal: int = 0
    queue: list[KSigInfo] = field(default_factory=list)

    def add(self, info: KSigInfo) -> None:
        self.signal |= 1 << (info.signo - 1)            # sigmask(), inline on the hot path
        self.queue.append(info)

    def take(self, sig: int) -> KSigInfo:
        """collect_signal: the first queued instance; the bit stays while others remain."""
        queue = self.queue
        if len(queue) == 1 and queue[0].signo == sig:       # the only one queued (kill's case)
            self.signal &= ~(1 << (sig - 1))
            return queue.pop()
        for i, q in enumerate(self.queue):
            if q.signo == sig:
                del self.queue[i]
                break
        else:
            q = KSigInfo(sig, SI_USER)
        for x in self.queue:
            if x.signo == sig:
                return q
        self.signal &= ~(1 << (sig - 1))
        return q

    def flush(self, mask: int) -> None:
        self.signal &= ~mask
        self.queue = [q for q in self.queue if not sigmask(q.signo) & mask]


@dataclass
class ITimer:
    """One interval timer (ITIMER_REAL on the simulated clock; VIRTUAL/PROF on the task's
    user / user+system cycles): the expiry and the reload interval, both in cycles."""
    expires: int = 0               # 0: disarmed
    interval: int = 0
    seq: int = 0                   # invalidates heap entries of an earlier arming


@dataclass
class PosixTimer(ITimer):
    """A timer_create timer (CLOCK_MONOTONIC/REALTIME on the simulated clock, SIGEV_SIGNAL or
    SIGEV_THREAD_ID): the signal, its sigval and the overrun count."""
    timerid: int = 0
    signo: int = 14
    value: int = 0
    notify: int = 0
    tid: int = 0
    overrun: int = 0
    queued: bool = False


@dataclass
class SignalStruct:
    """signal_struct: shared by a process's threads."""
    shared_pending: SigPending = field(default_factory=SigPending)
    pgid: int = 0
    sid: int = 0
    itimers: list[ITimer] = field(default_factory=lambda: [ITimer(), ITimer(), ITimer()])
    posix_timers: dict[int, "PosixTimer"] = field(default_factory=dict)
    group_exit: bool = False
    notified_parent: bool = False
    stop_pending: int = 0               # group stop in progress: the stop signal (JOBCTL_STOP_PENDING)
    stopped: bool = False               # SIGNAL_STOP_STOPPED
    group_exit_code: int = 0            # the stop signal wait4(WUNTRACED) has yet to report
    stop_continued: bool = False        # SIGNAL_STOP_CONTINUED: wait4(WCONTINUED) has yet to report
    cld_notify: int = 0                 # SIGNAL_CLD_MASK: CLD_CONTINUED/CLD_STOPPED for the parent,
                                        # told at a thread's next get_signal (do_signal)


@dataclass
class TaskSig:
    blocked: int = 0
    pending: SigPending = field(default_factory=SigPending)
    saved_sigmask: int | None = None       # set by rt_sigsuspend (TIF_RESTORE_SIGMASK)
    sas_ss_sp: int = 0
    sas_ss_size: int = 0
    sas_ss_flags: int = SS_DISABLE
    restart: tuple[int, tuple[int, ...], int] | None = None   # (nr, args, ERESTART*) to resolve
    in_wait: str = ""                      # rt_sigsuspend / rt_sigtimedwait in progress
    wait_real_blocked: int = 0
    wait_set: int = 0
    sleep_target: int | None = None         # nanosleep's wake-up (for the remaining time)
    pselect_zero: bool = False              # pselect6's timeout was {0, 0}: none written back
    poll_deadline: int | None = None        # ppoll's timeout, fixed on its first pass
    exit_signal: int = SIGCHLD
    fault_address: int = 0                 # arm64 thread.fault_address / fault_code (esr_context)
    fault_code: int = 0
    delivered: int = 0
    returned: int = 0


def on_sig_stack(st: TaskSig, sp: int) -> bool:
    """on_sig_stack(): the stack grows down, so the top of the area counts as on it.  An
    SS_AUTODISARM stack is never "on": it was disarmed when a handler went onto it, so a task
    can only be on it by its own doing, and a signal must still get through then."""
    if st.sas_ss_flags & SS_AUTODISARM:
        return False
    return st.sas_ss_size != 0 and st.sas_ss_sp < sp <= st.sas_ss_sp + st.sas_ss_size


def sas_ss_flags(st: TaskSig, sp: int) -> int:
    if not st.sas_ss_size:
        return SS_DISABLE
    return SS_ONSTACK if on_sig_stack(st, sp) else 0


def sigsp(st: TaskSig, sp: int, ka: SigAction) -> int:
    """The X/Open rule: SA_ONSTACK handlers run on the alternate stack unless already on it."""
    if ka.flags & SA_ONSTACK and st.sas_ss_size and not on_sig_stack(st, sp):
        return st.sas_ss_sp + st.sas_ss_size
    return sp


def init_task_signals(task: Task) -> None:
    """The first process: default actions, empty sets, its own process group and session."""
    task.sighand = SigHand()
    task.signal = SignalStruct(pgid=task.tgid, sid=task.tgid)
    task.sigstate = TaskSig()


def copy_signals(child: Task, parent: Task, flags: int) -> None:
    """copy_sighand / copy_signal at clone: threads share the actions and the process state;
    a new process gets copies of the actions and joins its parent's process group.  The blocked
    mask is inherited; pending signals are not."""
    CLONE_SIGHAND, CLONE_THREAD = 0x800, 0x10000
    if parent.sighand is None:
        init_task_signals(parent)
    child.sighand = parent.sighand if flags & CLONE_SIGHAND else parent.sighand.copy()
    if flags & CLONE_THREAD:
        child.signal = parent.signal
    else:
        child.signal = SignalStruct(pgid=parent.signal.pgid, sid=parent.signal.sid)
    pst = parent.sigstate
    child.sigstate = TaskSig(blocked=pst.blocked, exit_signal=flags & 0xFF)
    if not flags & 0x100:           # fork: the child inherits the alternate stack (same memory)
        child.sigstate.sas_ss_sp, child.sigstate.sas_ss_size = pst.sas_ss_sp, pst.sas_ss_size
        child.sigstate.sas_ss_flags = pst.sas_ss_flags


def flush_signal_handlers(task: Task) -> None:
    """execve: handled signals go back to SIG_DFL (ignored ones stay ignored), the alternate stack
    is forgotten; the blocked mask and pending signals survive exec."""
    if task.sighand is None:
        init_task_signals(task)
    task.sighand = task.sighand.copy()          # unshare_sighand
    for a in task.sighand.action[1:]:
        if a.handler != SIG_IGN:
            a.handler = SIG_DFL
        a.flags, a.restorer, a.mask = 0, 0, 0
    st = task.sigstate
    st.sas_ss_sp, st.sas_ss_size, st.sas_ss_flags = 0, 0, SS_DISABLE


class _SignalKind:
    value = _value_ = "signal"


class SignalEvent:
    """A trap-log entry for a signal delivery or sigreturn (quacks like machine.trap.Trap for
    TrapRecord and the trace printer; it is kernel bookkeeping, not a hardware trap)."""
    kind = _SignalKind()
    insn = None
    notes = None

    def __init__(self, pc: int, decision: str, handler: str = "do_signal") -> None:
        self.pc, self.decision, self.handler, self.cycles = pc, decision, handler, 0

    def syndrome(self) -> str:
        return "-"

    def describe(self) -> str:
        return self.decision


@dataclass
class _RealTimer:
    """A heap entry of the per-CPU timer list for a process's ITIMER_REAL."""
    signal: SignalStruct
    seq: int
    tgid: int

    # the heap compares (when, seq, entry); seq is unique, so entries are never compared
    state = None


@dataclass
class _PosixTimerEvent:
    """A heap entry of the per-CPU timer list for a timer_create timer."""
    signal: SignalStruct
    timer: PosixTimer
    seq: int
    state = None
