"""Signals as Linux delivers them — mirrors kernel/signal.c, kernel/time/itimer.c and the generic
half of the entry code (``exit_to_user_mode_loop`` -> ``arch_do_signal_or_restart``).

Mixed into :class:`emukern.kernel.kernel.Kernel`.  The state follows Linux's split:

* ``task.sighand`` (:class:`SigHand`, ``struct sighand_struct``): the 64 actions, shared by the
  threads of a process (CLONE_SIGHAND);
* ``task.signal`` (:class:`SignalStruct`, ``struct signal_struct``): the process-wide pending set
  (kill, group signals), the process group and session, the interval timers;
* ``task.sigstate`` (:class:`TaskSig`): what ``task_struct`` keeps per thread — ``blocked``,
  the thread's own pending set (tkill, faults), ``saved_sigmask``, the alternate stack.
* ``task.sigpending`` is TIF_SIGPENDING: set by :meth:`recalc_sigpending` when an unblocked
  signal is pending; the return-to-user path tests only this flag.

Generation (``send_signal``) queues a signal and wakes a thread that does not block it
(``complete_signal`` -> ``signal_wake_up``): a thread sleeping interruptibly is woken and its
syscall ends with an ERESTART* code; a thread running on another CPU is asked to reschedule,
the way Linux kicks it with an IPI.  Delivery happens on the way back to user mode:
:meth:`do_signal` (``arch_do_signal_or_restart`` + ``get_signal``) takes the default action
or calls the arch's ``setup_rt_frame`` (kernel/riscv/signal.py, kernel/arm64/signal.py), which
saves the FP/vector/SVE state by the arch's rules; ``rt_sigreturn`` restores it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.kernel.sysret import BLOCK
from emukern.kernel.task import Task, TaskState

if TYPE_CHECKING:
    from emukern.machine.cpu_base import Cpu
    from emukern.machine.trap import Trap

NSIG = 64
SIGHUP, SIGINT, SIGQUIT, SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE = 1, 2, 3, 4, 5, 6, 7, 8
SIGKILL, SIGUSR1, SIGSEGV, SIGUSR2, SIGPIPE, SIGALRM, SIGTERM = 9, 10, 11, 12, 13, 14, 15
SIGSTKFLT, SIGCHLD, SIGCONT, SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU = 16, 17, 18, 19, 20, 21, 22
SIGURG, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGWINCH, SIGIO, SIGPWR, SIGSYS = range(23, 32)
SIGRTMIN = 32

SIG_DFL, SIG_IGN = 0, 1
# asm-generic/signal.h (riscv64 and arm64 share it; only arm64 defines SA_RESTORER)
SA_NOCLDSTOP, SA_NOCLDWAIT, SA_SIGINFO = 0x1, 0x2, 0x4
SA_UNSUPPORTED, SA_EXPOSE_TAGBITS = 0x400, 0x800
SA_RESTORER = 0x04000000
SA_ONSTACK, SA_RESTART, SA_NODEFER, SA_RESETHAND = 0x08000000, 0x10000000, 0x40000000, 0x80000000
SIG_BLOCK, SIG_UNBLOCK, SIG_SETMASK = 0, 1, 2
SS_ONSTACK, SS_DISABLE, SS_AUTODISARM = 1, 2, 1 << 31
# si_code values (asm-generic/siginfo.h)
SI_USER, SI_KERNEL, SI_QUEUE, SI_TIMER, SI_TKILL = 0, 0x80, -1, -2, -6
ILL_ILLOPC, SEGV_MAPERR, SEGV_ACCERR, BUS_ADRALN, BUS_ADRERR, TRAP_BRKPT = 1, 1, 2, 1, 2, 1
CLD_EXITED, CLD_KILLED, CLD_DUMPED = 1, 2, 3
# the syscall restart codes (include/linux/errno.h): never seen by user space
ERESTARTSYS, ERESTARTNOINTR, ERESTARTNOHAND, ERESTART_RESTARTBLOCK = 512, 513, 514, 516
ITIMER_REAL, ITIMER_VIRTUAL, ITIMER_PROF = 0, 1, 2

SIG_WAKE: Any = object()           # task.woken_value of a task a signal woke (signal_wake_up)


def _mask(*sigs: int) -> int:
    m = 0
    for s in sigs:
        m |= 1 << (s - 1)
    return m


def s32(v: int) -> int:
    """An ``int`` syscall argument: the low 32 bits, sign-extended (arm64 passes w-registers)."""
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


def sigmask(sig: int) -> int:
    return 1 << (sig - 1)


# Linux's default actions (include/linux/signal.h: SIG_KERNEL_*_MASK); everything else, real-time
# signals included, terminates.
SIG_KERNEL_ONLY = _mask(SIGKILL, SIGSTOP)
SIG_KERNEL_COREDUMP = _mask(SIGQUIT, SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGSEGV, SIGXCPU,
                            SIGXFSZ, SIGSYS)
SIG_KERNEL_IGNORE = _mask(SIGCONT, SIGCHLD, SIGWINCH, SIGURG)
SIG_KERNEL_STOP = _mask(SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU)
# synchronous signals are dequeued first (kernel/signal.c: SYNCHRONOUS_MASK)
SYNCHRONOUS_MASK = _mask(SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE, SIGSYS)
ALL_SIGS = (1 << NSIG) - 1

SIGNAL_NAMES = E.SIGNAL_NAMES
SIGNAL_NUMBERS = {v: k for k, v in SIGNAL_NAMES.items()}


def signal_name(sig: int) -> str:
    return SIGNAL_NAMES.get(sig, str(sig))


def parse_signal(name: str) -> int:
    """'SIGUSR1', 'usr1' or '10' -> 10; ValueError otherwise (the debugger's ``break signal``)."""
    n = name.strip().upper()
    if n.isdigit() and 1 <= int(n) <= NSIG:
        return int(n)
    if not n.startswith("SIG"):
        n = "SIG" + n
    if n in SIGNAL_NUMBERS:
        return SIGNAL_NUMBERS[n]
    raise ValueError(f"unknown signal {name!r}")


def default_action(sig: int) -> str:
    m = sigmask(sig)
    if m & SIG_KERNEL_IGNORE:
        return "ignore"
    if m & SIG_KERNEL_STOP:
        return "stop"
    if m & SIG_KERNEL_COREDUMP:
        return "core"
    return "terminate"


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


@dataclass
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

    def to_bytes(self) -> bytes:
        b = bytearray(128)
        b[0:12] = (self.signo.to_bytes(4, "little") + self.errno.to_bytes(4, "little", signed=True)
                   + self.code.to_bytes(4, "little", signed=True))
        if self.addr is not None:
            b[16:24] = (self.addr & (2**64 - 1)).to_bytes(8, "little")
        elif self.timerid is not None:
            b[16:24] = self.timerid.to_bytes(4, "little", signed=True) + self.overrun.to_bytes(4, "little")
            b[24:32] = ((self.value or 0) & (2**64 - 1)).to_bytes(8, "little")
        else:
            b[16:24] = self.pid.to_bytes(4, "little", signed=True) + self.uid.to_bytes(4, "little")
            if self.status is not None:
                b[24:28] = self.status.to_bytes(4, "little", signed=True)
                b[32:48] = self.utime.to_bytes(8, "little") + self.stime.to_bytes(8, "little")
            elif self.value is not None:
                b[24:32] = (self.value & (2**64 - 1)).to_bytes(8, "little")
        return bytes(b)


@dataclass
class SigPending:
    """struct sigpending: a bit per pending signal plus the queue of their siginfo."""
    signal: int = 0
    queue: list[KSigInfo] = field(default_factory=list)

    def add(self, info: KSigInfo) -> None:
        self.signal |= sigmask(info.signo)
        self.queue.append(info)

    def take(self, sig: int) -> KSigInfo:
        """collect_signal: the first queued instance; the bit stays while others remain."""
        for i, q in enumerate(self.queue):
            if q.signo == sig:
                del self.queue[i]
                break
        else:
            q = KSigInfo(sig, SI_USER)
        if not any(x.signo == sig for x in self.queue):
            self.signal &= ~sigmask(sig)
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
    exit_signal: int = SIGCHLD
    fault_address: int = 0                 # arm64 thread.fault_address / fault_code (esr_context)
    fault_code: int = 0
    delivered: int = 0
    returned: int = 0
    notes: list[str] = field(default_factory=list)


def on_sig_stack(st: TaskSig, sp: int) -> bool:
    """on_sig_stack(): the stack grows down, so the top of the area counts as on it."""
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


class SignalMixin:
    """The signal half of the kernel (state lives on tasks; see the module docstring)."""

    tasks: dict
    percpu: list
    cpus: list
    config: Any
    cost: Any
    clock: Any
    arch: Any
    signal_listeners: list[Any]                # (cpu, task, siginfo) when a handler's frame is set up
    fault_report: dict[str, Any] | None
    _seq: int                                  # the kernel's event sequence (trap log, timers)

    if TYPE_CHECKING:       # what the signal code calls on the rest of the kernel
        def wake_up(self, task: Task, now: int, value: int | None = None) -> None: ...
        def block_current(self, cpu: "Cpu", task: Task, reason: str) -> None: ...
        def add_timer(self, task: Task, wake_at: int) -> bool: ...
        def account(self, cpu: "Cpu", task: Task | None) -> None: ...
        def _log_trap(self, cpu: "Cpu", task: Task, trap: Any) -> None: ...
        def do_group_exit(self, cpu: "Cpu", task: Task, status: int, signaled: bool = False) -> None: ...
        def syscall_name(self, nr: int) -> str: ...

    # ---- helpers --------------------------------------------------------------------------------
    def _threads(self, task: Task) -> list[Task]:
        return [t for t in self.tasks.values() if t.tgid == task.tgid and t.alive]

    def recalc_sigpending(self, t: Task) -> None:
        st = t.sigstate
        t.sigpending = bool((st.pending.signal | t.signal.shared_pending.signal) & ~st.blocked)

    def sig_ignored(self, t: Task, sig: int) -> bool:
        """sig_ignored: a blocked signal is always queued (the action may change before it is
        unblocked); otherwise SIG_IGN or a default action of 'ignore' drops it at once."""
        if t.sigstate.blocked & sigmask(sig):
            return False
        h = t.sighand.action[sig].handler
        return h == SIG_IGN or (h == SIG_DFL and bool(sigmask(sig) & SIG_KERNEL_IGNORE))

    # ---- generation -----------------------------------------------------------------------------
    def send_signal(self, cpu: "Cpu", t: Task, info: KSigInfo, group: bool) -> int:
        """__send_signal_locked: queue ``info`` for the thread (``group`` False: tkill, faults) or
        the process (kill), then complete_signal.  Returns 0 (a dropped signal is no error)."""
        sig = info.signo
        if t.sighand is None:
            init_task_signals(t)
        if not self.prepare_signal(cpu, t, sig):
            return 0
        pending = t.signal.shared_pending if group else t.sigstate.pending
        if sig < SIGRTMIN and pending.signal & sigmask(sig):
            return 0                    # legacy signals do not queue twice
        pending.add(info)
        self.complete_signal(cpu, t, sig, group)
        return 0

    def prepare_signal(self, cpu: "Cpu", t: Task, sig: int) -> bool:
        """SIGCONT discards pending stop signals and stop signals discard a pending SIGCONT
        (whatever the actions); then an ignored signal is dropped."""
        group = self._threads(t) or [t]
        if sig == SIGCONT or sig == SIGKILL:
            self.do_signal_continue(cpu, t)
        if sigmask(sig) & SIG_KERNEL_STOP:
            for th in group:
                th.sigstate.pending.flush(sigmask(SIGCONT))
            t.signal.shared_pending.flush(sigmask(SIGCONT))
        if sig == SIGCONT:
            for th in group:
                th.sigstate.pending.flush(SIG_KERNEL_STOP)
            t.signal.shared_pending.flush(SIG_KERNEL_STOP)
        return not self.sig_ignored(t, sig)

    def complete_signal(self, cpu: "Cpu", p: Task, sig: int, group: bool) -> None:
        """Pick a thread that does not block the signal (the target first) and wake it."""
        def wants(t: Task) -> bool:
            return t.alive and not t.sigstate.blocked & sigmask(sig)
        target = None
        if wants(p):
            target = p
        elif group:
            target = next((t for t in sorted(self._threads(p), key=lambda x: x.tid) if wants(t)), None)
        if sig == SIGKILL:
            target = p                  # SIGKILL cannot be blocked
        if target is None:
            for t in self._threads(p) if group else [p]:
                self.recalc_sigpending(t)
            return
        self.recalc_sigpending(target)
        self.signal_wake_up(cpu, target)

    def signal_wake_up(self, cpu: "Cpu", t: Task) -> None:
        """TIF_SIGPENDING + wake an interruptible sleeper, or kick the CPU it runs on.  A stopped
        task stays stopped (only SIGCONT and SIGKILL resume it, in prepare_signal)."""
        if not t.sigpending:
            return
        if t.state is TaskState.BLOCKED and t.wait_reason.startswith("stopped"):
            return
        if t.state is TaskState.BLOCKED:
            for wq in getattr(t, "waitqueues", []):
                wq.remove(t)
            t.waitqueues = []
            self.wake_up(t, cpu.now, SIG_WAKE)
            return
        for pc in self.percpu:
            if pc.curr is t and pc.index != cpu.index:
                pc.need_resched = True                      # the IPI: it enters the kernel soon
                self.cpus[pc.index].stop()

    def force_sig_info(self, cpu: "Cpu", t: Task, info: KSigInfo) -> None:
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
        self.recalc_sigpending(t)
        self.signal_wake_up(cpu, t)

    def force_sig_fault(self, cpu: "Cpu", task: Task, sig: int, code: int, addr: int | None,
                        trap: "Trap | None", report: dict[str, Any] | None) -> None:
        """arm64_force_sig_fault / force_sig_fault: the faulting instruction is where user mode
        resumes (the frame's pc), and on arm64 the fault address and ESR go into the frame."""
        if trap is not None:
            cpu.set_pc(trap.pc)
            st = task.sigstate
            if self.config.arch == "arm64":
                st.fault_address = addr or 0
                st.fault_code = trap.esr or 0
        self.force_sig_info(cpu, task, KSigInfo(sig, code, addr=addr, report=report))

    # ---- delivery: exit_to_user_mode_loop -> arch_do_signal_or_restart ------------------------
    def dequeue_signal(self, t: Task, mask: int) -> KSigInfo | None:
        """The lowest pending signal not in ``mask``: synchronous ones first, the thread's own set
        before the process's."""
        st = t.sigstate
        for pending in (st.pending, t.signal.shared_pending):
            avail = pending.signal & ~mask
            if not avail:
                continue
            sync = avail & SYNCHRONOUS_MASK
            bits = sync or avail
            sig = (bits & -bits).bit_length()
            return pending.take(sig)
        return None

    def do_signal(self, cpu: "Cpu", task: Task, trap: "Trap | None" = None) -> None:
        """arch_do_signal_or_restart: resolve a pending syscall restart, then deliver every
        deliverable signal (each handler's frame stacks on the previous one, so the last one
        runs first, as in Linux's loop over TIF_SIGPENDING)."""
        st = task.sigstate
        if st.notes:
            notes, st.notes = st.notes, []
            for n in notes:
                self._log_signal(cpu, task, n, trap)
        restart = st.restart
        st.restart = None
        if restart is not None:
            nr, args, code = restart
            # prepare for the restart: a0/x0 back to its original value, pc back at ecall/svc
            cpu.set_reg(10 if self.config.arch == "riscv64" else 0, args[0])
            cpu.set_pc(cpu.get_pc() - 4)
        if task.signal.stop_pending and not task.signal.group_exit:
            # another thread started a group stop: park here (a restart is already prepared)
            self.do_signal_stop(cpu, task, task.signal.stop_pending, trap)
            return
        handled = False
        while task.sigpending:
            info = self.dequeue_signal(task, st.blocked)
            self.recalc_sigpending(task)
            if info is None:
                break
            sig = info.signo
            ka = task.sighand.action[sig]
            if ka.handler == SIG_IGN:
                continue
            if ka.handler == SIG_DFL:
                act = default_action(sig)
                if act == "ignore":
                    continue
                if act == "stop":
                    if sig != SIGSTOP and self.is_current_pgrp_orphaned(task):
                        continue        # Linux: no terminal stops for an orphaned process group
                    self.do_signal_stop(cpu, task, sig, trap)
                    return
                self._fatal_signal(cpu, task, info, trap)
                return
            if restart is not None:
                code = restart[2]
                if code in (ERESTARTNOHAND, ERESTART_RESTARTBLOCK) or (
                        code == ERESTARTSYS and not ka.flags & SA_RESTART):
                    cpu.set_reg(10 if self.config.arch == "riscv64" else 0, (-E.EINTR) & (2**64 - 1))
                    cpu.set_pc(cpu.get_pc() + 4)
                restart = None
            self.handle_signal(cpu, task, info, ka, trap)
            handled = True
        if restart is not None and restart[2] == ERESTART_RESTARTBLOCK:
            pass        # restart_syscall: emukern re-runs the call itself (same arguments)
        if not handled and st.saved_sigmask is not None:
            st.blocked = st.saved_sigmask           # restore_saved_sigmask
            st.saved_sigmask = None
            self.recalc_sigpending(task)

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
        task.waitqueues = []
        self.block_current(cpu, task, f"stopped ({signal_name(sig)})")

    def signal_wake_up_state(self, cpu: "Cpu", t: Task) -> None:
        """Make ``t`` reach its return to user mode soon (interrupt a sleep, kick its CPU)."""
        if t.state is TaskState.BLOCKED and not t.wait_reason.startswith("stopped"):
            for wq in getattr(t, "waitqueues", []):
                wq.remove(t)
            t.waitqueues = []
            self.wake_up(t, cpu.now, SIG_WAKE)
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
                self.wake_up(th, cpu.now)

    def handle_signal(self, cpu: "Cpu", task: Task, info: KSigInfo, ka: SigAction,
                      trap: "Trap | None") -> None:
        st = task.sigstate
        oldset = st.saved_sigmask if st.saved_sigmask is not None else st.blocked
        cpu.charge(self.cost.signal_deliver)
        note = self.arch_setup_rt_frame(cpu, task, info, ka, oldset)
        if note is None:
            # signal_setup_done(failed): the frame could not be written -> force SIGSEGV
            self._log_signal(cpu, task, f"{signal_name(info.signo)}: cannot write the signal frame: SIGSEGV",
                             trap)
            task.sighand.action[SIGSEGV].handler = SIG_DFL
            self.force_sig_info(cpu, task, KSigInfo(SIGSEGV, SI_KERNEL, report={
                "signal": SIGSEGV, "signame": "SIGSEGV", "tid": task.tid,
                "why": f"could not write the frame for {signal_name(info.signo)} (stack unusable)"}))
            return
        # signal_delivered: block sa_mask (+ the signal unless SA_NODEFER), SA_RESETHAND
        st.saved_sigmask = None
        newblocked = oldset | ka.mask
        if not ka.flags & SA_NODEFER:
            newblocked |= sigmask(info.signo)
        st.blocked = newblocked & ~SIG_KERNEL_ONLY
        if ka.flags & SA_RESETHAND:
            task.sighand.action[info.signo] = SigAction()
        st.delivered += 1
        self.recalc_sigpending(task)
        self._log_signal(cpu, task, f"deliver {signal_name(info.signo)} (code {info.code}) to "
                                    f"handler {ka.handler:#x}: {note}", trap)
        for cb in self.signal_listeners:
            cb(cpu, task, info)

    def _log_signal(self, cpu: "Cpu", task: Task, text: str, trap: "Trap | None" = None) -> None:
        """A line in the trap log (``--trace traps``, the debugger's history): a note on the trap
        being handled, or an entry of its own when the delivery happens outside a trap (a
        context switch, the tick).  Lines written inside a syscall handler wait in
        ``sigstate.notes`` until do_signal passes them to the syscall's trap."""
        if trap is not None:
            if trap.notes is None:
                trap.notes = [text]
            else:
                trap.notes.append(text)
        elif self._in_handler:
            task.sigstate.notes.append(text)
            task.sigpending = True          # do_signal collects them on the way out
        else:
            self._log_trap(cpu, task, SignalEvent(cpu.get_pc(), text))

    _in_handler = False

    def _fatal_signal(self, cpu: "Cpu", task: Task, info: KSigInfo, trap: "Trap | None") -> None:
        """do_group_exit(sig): the default action kills the whole thread group."""
        sig = info.signo
        report = info.report or {"signal": sig, "signame": signal_name(sig), "tid": task.tid,
                                 "why": self._why(info)}
        report["signal"], report["signame"] = sig, signal_name(sig)
        task.fault_report = report
        if self.fault_report is None:
            self.fault_report = report
        if trap is not None and not trap.decision:
            trap.decision = f"{signal_name(sig)}: {report.get('why', '')}"
        if trap is None or info.report is None:
            self._log_signal(cpu, task, f"{signal_name(sig)}: default action {default_action(sig)}: "
                                        f"the thread group dies", trap)
        cpu.charge(self.cost.signal_deliver)
        self.do_group_exit(cpu, task, sig, signaled=True)

    @staticmethod
    def _why(info: KSigInfo) -> str:
        if info.code == SI_USER:
            return f"killed by {signal_name(info.signo)} from pid {info.pid}"
        if info.code == SI_TKILL:
            return f"killed by {signal_name(info.signo)} (tkill) from pid {info.pid}"
        if info.code == SI_KERNEL:
            return f"{signal_name(info.signo)} sent by the kernel"
        return f"{signal_name(info.signo)} (si_code {info.code})"

    def arch_setup_rt_frame(self, cpu: "Cpu", task: Task, info: KSigInfo, ka: SigAction,
                            oldset: int) -> str | None:
        if self.config.arch == "riscv64":
            from emukern.kernel.riscv import signal as rs
            return rs.setup_rt_frame(self, cpu, task, info, ka, oldset)
        from emukern.kernel.arm64 import signal as asig
        return asig.setup_rt_frame(self, cpu, task, info, ka, oldset)

    def _arch_signal(self) -> Any:
        if self.config.arch == "riscv64":
            from emukern.kernel.riscv import signal as mod
        else:
            from emukern.kernel.arm64 import signal as mod      # type: ignore[no-redef]
        return mod

    def sys_rt_sigreturn(self, cpu, task, *a):
        self._sig_init(task)
        cpu.charge(self.cost.syscall_body)
        self._in_handler = True
        try:
            return self._arch_signal().sys_rt_sigreturn(self, cpu, task)
        finally:
            self._in_handler = False

    def signal_minsigstksz(self) -> int:
        """AT_MINSIGSTKSZ: the largest frame this machine's kernel can build (VLEN / SVE VL)."""
        return self._arch_signal().signal_minsigstksz(self)

    @property
    def sigtramp_addr(self) -> int:
        return self.arch.STACK_TOP - self.arch.STACK_SIZE - 2 * 4096

    def map_sigtramp(self, mm: Any) -> None:
        """The sigreturn trampoline page (Linux: the vDSO's __vdso_rt_sigreturn /
        __kernel_rt_sigreturn): a handler's return address when the program gave none."""
        words = self._arch_signal().SIGTRAMP_WORDS
        mm.map(self.sigtramp_addr, 4096, "r-x", "[vdso]")
        mm.write(self.sigtramp_addr, b"".join(w.to_bytes(4, "little") for w in words), need="")

    # ---- the blocked-syscall side: ERESTART* codes ---------------------------------------------
    def syscall_interrupted(self, cpu: "Cpu", task: Task, nr: int, args: tuple[int, ...]) -> int | None:
        """A task a signal woke (woken_value SIG_WAKE) ends its sleep here instead of re-running
        the wait: the code says what ``do_signal`` does with the call (restart or -EINTR)."""
        if task.woken_value is not SIG_WAKE:
            return None
        task.woken_value = None
        name = self.syscall_name(nr)
        if name in ("rt_sigsuspend", "rt_sigtimedwait"):
            return None                                 # they look at the pending set themselves
        if name == "ppoll":
            task.sigstate.in_wait = ""
            return -ERESTARTNOHAND
        # A wait loop looks at its condition before at signal_pending (do_wait, pipe_read,
        # pipe_write): if what it waited for is there, the call completes normally.
        if name == "wait4":
            ret = self.sys_wait4(cpu, task, args[0], args[1], args[2] | 1, args[3])   # WNOHANG probe
            return ret if ret != 0 else -ERESTARTSYS
        if name in ("read", "write"):
            from emukern.kernel.files import PipeEnd
            f = task.files.get(s32(args[0])) if task.files is not None else None
            if isinstance(f, PipeEnd):
                p = f.pipe
                if (name == "read" and (p.buf or p.writers == 0)) or \
                        (name == "write" and (len(p.buf) < 65536 or p.readers == 0)):
                    return None
        if name in ("nanosleep", "clock_nanosleep"):
            st = task.sigstate
            target = st.sleep_target
            rem_ptr = args[1] if name == "nanosleep" else args[3]
            absolute = name == "clock_nanosleep" and args[1] & 1
            if rem_ptr and target is not None and not absolute:
                left = max(0, int(self.clock.ns(target) - self.clock.ns(cpu.now)))
                try:
                    task.mm.write(rem_ptr, (left // 10**9).to_bytes(8, "little") + (left % 10**9).to_bytes(8, "little"))
                except Exception:
                    return -E.EFAULT
            return -ERESTART_RESTARTBLOCK if not absolute else -ERESTARTNOHAND
        return -ERESTARTSYS

    def note_restart(self, task: Task, nr: int, args: tuple[int, ...], ret: int) -> None:
        """Record an ERESTART* return so do_signal can resolve it (regs->a0 in Linux)."""
        if task.sighand is None:
            init_task_signals(task)
        task.sigstate.restart = (nr, args, -ret)
        task.sigpending = True          # make the return path look (TIF_SIGPENDING was set)

    # ---- syscalls: dispositions and masks -----------------------------------------------------
    def _sig_init(self, task: Task) -> TaskSig:
        if task.sighand is None:
            init_task_signals(task)
        return task.sigstate

    def sys_rt_sigaction(self, cpu, task, sig, act, oldact, sigsetsize, *a):
        sig = s32(sig)
        """do_sigaction: SIGKILL/SIGSTOP cannot be caught or ignored; setting SIG_IGN (or SIG_DFL
        of an ignored signal) discards it from every pending set of the process."""
        self._sig_init(task)
        cpu.charge(self.cost.syscall_body)
        if sigsetsize != 8:
            return -E.EINVAL
        if not 1 <= sig <= NSIG or (act and sigmask(sig) & SIG_KERNEL_ONLY):
            return -E.EINVAL
        restorer = self.config.arch == "arm64"
        size = 32 if restorer else 24
        new = None
        if act:
            raw = task.mm.read(act, size)
            h, flags = int.from_bytes(raw[0:8], "little"), int.from_bytes(raw[8:16], "little")
            rest = int.from_bytes(raw[16:24], "little") if restorer else 0
            mask = int.from_bytes(raw[size - 8:size], "little")
            # unknown flag bits are cleared (SA_UNSUPPORTED lets a program detect that)
            known = (SA_NOCLDSTOP | SA_NOCLDWAIT | SA_SIGINFO | SA_ONSTACK | SA_RESTART | SA_NODEFER
                     | SA_RESETHAND | SA_EXPOSE_TAGBITS | (SA_RESTORER if restorer else 0))
            new = SigAction(h, flags & known & 0xFFFFFFFF, rest, mask & ~SIG_KERNEL_ONLY)
        ka = task.sighand.action[sig]
        if oldact:
            out = ka.handler.to_bytes(8, "little") + ka.flags.to_bytes(8, "little")
            if restorer:
                out += ka.restorer.to_bytes(8, "little")
            task.mm.write(oldact, out + ka.mask.to_bytes(8, "little"))
        if new is not None:
            task.sighand.action[sig] = new
            if new.handler == SIG_IGN or (new.handler == SIG_DFL and sigmask(sig) & SIG_KERNEL_IGNORE):
                task.signal.shared_pending.flush(sigmask(sig))
                for t in self._threads(task):
                    t.sigstate.pending.flush(sigmask(sig))
                    self.recalc_sigpending(t)
        return 0

    def set_current_blocked(self, task: Task, mask: int) -> None:
        task.sigstate.blocked = mask & ~SIG_KERNEL_ONLY & ALL_SIGS
        self.recalc_sigpending(task)

    def sys_rt_sigprocmask(self, cpu, task, how, nset, oset, sigsetsize, *a):
        st = self._sig_init(task)
        cpu.charge(self.cost.syscall_body)
        how = s32(how)
        if sigsetsize != 8:
            return -E.EINVAL
        old = st.blocked
        if nset:
            m = task.mm.read_u64(nset)
            if how == SIG_BLOCK:
                new = old | m
            elif how == SIG_UNBLOCK:
                new = old & ~m
            elif how == SIG_SETMASK:
                new = m
            else:
                return -E.EINVAL
        if oset:
            task.mm.write_u64(oset, old)
        if nset:
            self.set_current_blocked(task, new)
        return 0

    def sys_rt_sigpending(self, cpu, task, uset, sigsetsize, *a):
        st = self._sig_init(task)
        if sigsetsize > 8:
            return -E.EINVAL
        pend = (st.pending.signal | task.signal.shared_pending.signal) & st.blocked
        task.mm.write(uset, pend.to_bytes(8, "little")[:sigsetsize])
        return 0

    def sys_rt_sigsuspend(self, cpu, task, unewset, sigsetsize, *a):
        """Wait with a temporary mask; always -EINTR once a handler ran (ERESTARTNOHAND); the
        old mask comes back when the handler's frame has saved it (saved_sigmask)."""
        st = self._sig_init(task)
        if st.in_wait == "sigsuspend":
            if task.sigpending:
                st.in_wait = ""
                return -ERESTARTNOHAND
            self.block_current(cpu, task, "rt_sigsuspend")
            return BLOCK
        if sigsetsize != 8:
            return -E.EINVAL
        m = task.mm.read_u64(unewset)
        st.saved_sigmask = st.blocked
        self.set_current_blocked(task, m)
        if task.sigpending:
            return -ERESTARTNOHAND
        st.in_wait = "sigsuspend"
        task.waitqueues = []
        self.block_current(cpu, task, "rt_sigsuspend")
        return BLOCK

    def sys_rt_sigtimedwait(self, cpu, task, uthese, uinfo, uts, sigsetsize, *a):
        """Take a signal of the set synchronously: its number (and siginfo), -EAGAIN on
        timeout, -EINTR when another signal's handler interrupts the wait."""
        st = self._sig_init(task)
        if st.in_wait == "sigtimedwait":
            timed_out = task.woken_value == -E.ETIMEDOUT
            task.woken_value = None
            these = st.wait_set
            st.blocked = st.wait_real_blocked
            st.in_wait = ""
            info = self.dequeue_signal(task, ~these & ALL_SIGS)
            self.recalc_sigpending(task)
            if info is not None:
                return self._sigwait_done(task, info, uinfo)
            if timed_out:
                return -E.EAGAIN
            if task.sigpending:
                return -E.EINTR
            # spurious wake-up: wait again
        if sigsetsize != 8:
            return -E.EINVAL
        these = task.mm.read_u64(uthese) & ~SIG_KERNEL_ONLY
        info = self.dequeue_signal(task, ~these & ALL_SIGS)
        self.recalc_sigpending(task)
        if info is not None:
            return self._sigwait_done(task, info, uinfo)
        target = None
        if uts:
            raw = task.mm.read(uts, 16)
            sec, nsec = int.from_bytes(raw[:8], "little", signed=True), int.from_bytes(raw[8:], "little", signed=True)
            if sec < 0 or not 0 <= nsec < 10**9:
                return -E.EINVAL
            if sec == 0 and nsec == 0:
                return -E.EAGAIN
            target = cpu.now + self.clock.cycles_for_ns(sec * 10**9 + nsec)
        st.wait_set = these
        st.wait_real_blocked = st.blocked
        st.blocked = st.blocked & ~these
        self.recalc_sigpending(task)
        st.in_wait = "sigtimedwait"
        task.waitqueues = []
        if target is not None:
            self.add_timer(task, target)
        self.block_current(cpu, task, "rt_sigtimedwait")
        return BLOCK

    def _sigwait_done(self, task: Task, info: KSigInfo, uinfo: int) -> int:
        if uinfo:
            task.mm.write(uinfo, info.to_bytes())
        return info.signo

    def sys_ppoll(self, cpu, task, ufds, nfds, tmo, sigmask_ptr, sigsetsize, *a):
        """ppoll with no descriptors — glibc's pause() and a signal-aware sleep: wait (with the
        temporary mask) for a signal or the timeout.  Polling descriptors is not modelled
        (-ENOSYS, as before)."""
        st = self._sig_init(task)
        if st.in_wait == "ppoll":
            st.in_wait = ""
            if task.woken_value == -E.ETIMEDOUT:
                task.woken_value = None
                if st.saved_sigmask is not None:
                    st.blocked, st.saved_sigmask = st.saved_sigmask, None
                    self.recalc_sigpending(task)
                return 0
        if nfds:
            return -E.ENOSYS
        target = None
        if tmo:
            raw = task.mm.read(tmo, 16)
            sec, nsec = int.from_bytes(raw[:8], "little", signed=True), int.from_bytes(raw[8:], "little", signed=True)
            if sec < 0 or not 0 <= nsec < 10**9:
                return -E.EINVAL
            target = cpu.now + self.clock.cycles_for_ns(sec * 10**9 + nsec)
        if sigmask_ptr:
            if sigsetsize != 8:
                return -E.EINVAL
            st.saved_sigmask = st.blocked
            self.set_current_blocked(task, task.mm.read_u64(sigmask_ptr))
        if task.sigpending:
            return -ERESTARTNOHAND
        if target is not None and target <= cpu.now:
            if st.saved_sigmask is not None:
                st.blocked, st.saved_sigmask = st.saved_sigmask, None
                self.recalc_sigpending(task)
            return 0
        st.in_wait = "ppoll"
        task.waitqueues = []
        if target is not None:
            self.add_timer(task, target)
        self.block_current(cpu, task, "ppoll")
        return BLOCK

    def sys_sigaltstack(self, cpu, task, uss, uoss, *a):
        return self.do_sigaltstack(cpu, task, uss, uoss, self._user_sp(cpu))

    def _user_sp(self, cpu: "Cpu") -> int:
        return cpu.reg(2) if self.config.arch == "riscv64" else cpu.sp

    def min_sigstksz(self) -> int:
        return 5120 if self.config.arch == "arm64" else 2048    # MINSIGSTKSZ of each uapi

    def do_sigaltstack(self, cpu, task, uss, uoss, sp) -> int:
        st = self._sig_init(task)
        old = (st.sas_ss_sp, sas_ss_flags(st, sp) | (st.sas_ss_flags & SS_AUTODISARM), st.sas_ss_size)
        if uss:
            raw = task.mm.read(uss, 24)
            ss_sp = int.from_bytes(raw[0:8], "little")
            ss_flags = int.from_bytes(raw[8:12], "little")
            ss_size = int.from_bytes(raw[16:24], "little")
            if on_sig_stack(st, sp):
                return -E.EPERM
            mode = ss_flags & ~SS_AUTODISARM
            if mode not in (SS_DISABLE, SS_ONSTACK, 0):
                return -E.EINVAL
            if mode == SS_DISABLE:
                ss_sp = ss_size = 0
            elif ss_size < self.min_sigstksz():
                return -E.ENOMEM
            st.sas_ss_sp, st.sas_ss_size = ss_sp, ss_size
            st.sas_ss_flags = ss_flags if mode != SS_DISABLE else SS_DISABLE
        if uoss:
            task.mm.write(uoss, old[0].to_bytes(8, "little") + old[1].to_bytes(4, "little")
                          + bytes(4) + old[2].to_bytes(8, "little"))
        return 0

    def save_altstack(self, task: Task, sp: int) -> bytes:
        """__save_altstack: the stack_t in the frame's uc_stack."""
        st = task.sigstate
        return (st.sas_ss_sp.to_bytes(8, "little") + sas_ss_flags(st, sp).to_bytes(4, "little")
                + bytes(4) + st.sas_ss_size.to_bytes(8, "little"))

    def restore_altstack(self, cpu, task, uss: int, sp: int) -> bool:
        """restore_altstack: only a fault makes rt_sigreturn fail (EPERM on the stack is fine)."""
        try:
            return self.do_sigaltstack(cpu, task, uss, 0, sp) != -E.EFAULT
        except Exception:
            return False

    # ---- syscalls: sending -----------------------------------------------------------------------
    def _processes(self) -> list[Task]:
        return sorted((t for t in self.tasks.values() if t.is_thread_leader and t.alive
                       or t.is_thread_leader and any(x.alive for x in self.tasks.values() if x.tgid == t.tgid)),
                      key=lambda t: t.tid)

    def _group_target(self, t: Task) -> Task | None:
        leader = self.tasks.get(t.tgid)
        if leader is not None and leader.alive:
            return leader
        return next((x for x in self._threads(t)), None)

    def _kill_info(self, task: Task, sig: int, code: int = SI_USER) -> KSigInfo:
        return KSigInfo(sig, code, pid=task.tgid, uid=0)

    def sys_kill(self, cpu, task, pid, sig, *a):
        """kill_something_info: pid > 0 a process (any of its thread ids names it), 0 the caller's
        process group, -1 every process but init and the caller, < -1 the process group -pid."""
        self._sig_init(task)
        pid, sig = s32(pid), s32(sig)
        cpu.charge(self.cost.syscall_body)
        if not 0 <= sig <= NSIG:
            return -E.EINVAL
        if pid > 0:
            t = self.tasks.get(pid)
            tgt = self._group_target(t) if t is not None else None
            if tgt is None:
                return -E.ESRCH
            return self.send_signal(cpu, tgt, self._kill_info(task, sig), True) if sig else 0
        if pid == -1:
            targets = [p for p in self._processes() if p.tgid not in (1, task.tgid)]
        else:
            pgid = task.signal.pgid if pid == 0 else -pid
            targets = [p for p in self._processes() if p.signal is not None and p.signal.pgid == pgid]
        targets = [g for g in (self._group_target(p) for p in targets) if g is not None]
        if not targets:
            return -E.ESRCH
        if sig:
            for t in targets:
                self.send_signal(cpu, t, self._kill_info(task, sig), True)
        return 0

    def _tkill(self, cpu, task, tgid: int, tid: int, sig: int) -> int:
        self._sig_init(task)
        cpu.charge(self.cost.syscall_body)
        if tid <= 0 or not 0 <= sig <= NSIG:
            return -E.EINVAL
        t = self.tasks.get(tid)
        if t is None or not t.alive or (tgid > 0 and t.tgid != tgid):
            return -E.ESRCH
        return self.send_signal(cpu, t, self._kill_info(task, sig, SI_TKILL), False) if sig else 0

    def sys_tgkill(self, cpu, task, tgid, tid, sig, *a):
        if s32(tgid) <= 0:
            return -E.EINVAL
        return self._tkill(cpu, task, s32(tgid), s32(tid), s32(sig))

    def sys_tkill(self, cpu, task, tid, sig, *a):
        return self._tkill(cpu, task, 0, s32(tid), s32(sig))

    def sys_rt_sigqueueinfo(self, cpu, task, pid, sig, uinfo, *a):
        self._sig_init(task)
        raw = task.mm.read(uinfo, 128)
        code = int.from_bytes(raw[8:12], "little", signed=True)
        if code >= 0 or code == SI_TKILL:
            return -E.EPERM          # only the kernel may claim to be the kernel (or tkill)
        t = self.tasks.get(s32(pid))
        tgt = self._group_target(t) if t is not None else None
        if tgt is None:
            return -E.ESRCH
        sig = s32(sig)
        if not 1 <= sig <= NSIG:
            return -E.EINVAL
        info = KSigInfo(sig, code, pid=task.tgid, value=int.from_bytes(raw[24:32], "little"))
        return self.send_signal(cpu, tgt, info, True)

    # (setpgid/getpgid/setsid/getsid are in kernel/syscalls_proc.py; they keep the process
    # group and session in the SignalStruct, where kill(-pgid) finds them)

    # ---- SIGCHLD ---------------------------------------------------------------------------------
    def exit_notify(self, cpu: "Cpu", task: Task) -> bool:
        """do_notify_parent when a process's last thread is gone: SIGCHLD (the clone's exit
        signal) with CLD_EXITED/KILLED/DUMPED.  True if the child is reaped at once (the parent
        ignores SIGCHLD or set SA_NOCLDWAIT)."""
        leader = self.tasks.get(task.tgid)
        if leader is None or leader.parent is None or leader.signal is None or leader.signal.notified_parent:
            return False
        if any(t.alive for t in self.tasks.values() if t.tgid == task.tgid and t is not task):
            return False
        leader.signal.notified_parent = True
        parent = self._group_target(leader.parent) or leader.parent
        if not parent.alive or parent.sighand is None:
            return False
        sig = leader.sigstate.exit_signal if leader.sigstate else SIGCHLD
        status = leader.exit_code if leader is not task else task.exit_code
        if status & 0x7F:
            code = CLD_DUMPED if status & 0x80 else CLD_KILLED
            val = status & 0x7F
        else:
            code, val = CLD_EXITED, (status >> 8) & 0xFF
        hz = self.clock.tick_cycles
        info = KSigInfo(sig, code, pid=leader.tgid, status=val,
                        utime=sum(t.utime for t in self.tasks.values() if t.tgid == leader.tgid) // hz,
                        stime=sum(t.stime for t in self.tasks.values() if t.tgid == leader.tgid) // hz)
        ka = parent.sighand.action[SIGCHLD]
        autoreap = sig == SIGCHLD and (ka.handler == SIG_IGN or bool(ka.flags & SA_NOCLDWAIT))
        if sig:
            self.send_signal(cpu, parent, info, True)
        return autoreap

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
        sigs = ev.signal
        it = sigs.itimers[ITIMER_REAL]
        if it.seq != ev.seq or not it.expires:
            return
        leader = next((t for t in sorted(self.tasks.values(), key=lambda x: x.tid)
                       if t.signal is sigs and t.alive), None)
        if leader is None:
            it.expires = 0
            return
        if it.interval:
            it.expires = max(it.expires + it.interval, when + 1)
            self._arm_real(cpu, leader, it)
        else:
            it.expires = 0
        self.send_signal(cpu, leader, KSigInfo(SIGALRM, SI_KERNEL), True)

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
            target = next((t for t in sorted(self.tasks.values(), key=lambda x: x.tid)
                           if t.signal is ev.signal and t.alive), None)
        if target is None:
            tm.expires = 0
            return
        if tm.interval:
            tm.expires = max(tm.expires + tm.interval, when + 1)
            self._arm_posix(cpu, target, tm)
        else:
            tm.expires = 0
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

    # ---- the debugger's view ----------------------------------------------------------------------
    def signal_view(self, task: Task) -> dict[str, Any]:
        """Dispositions, pending and blocked sets and the alternate stack (``info signals``)."""
        self._sig_init(task)
        st = task.sigstate
        acts = {}
        for sig in range(1, NSIG + 1):
            a = task.sighand.action[sig]
            if a.handler != SIG_DFL or a.flags or a.mask:
                acts[signal_name(sig)] = {"handler": "SIG_IGN" if a.handler == SIG_IGN else f"{a.handler:#x}",
                                          "flags": a.flags, "mask": a.mask}
        def names(m: int) -> list[str]:
            return [signal_name(s) for s in range(1, NSIG + 1) if m & sigmask(s)]
        return {"tid": task.tid, "actions": acts, "blocked": names(st.blocked),
                "pending": names(st.pending.signal), "shared_pending": names(task.signal.shared_pending.signal),
                "altstack": {"sp": st.sas_ss_sp, "size": st.sas_ss_size,
                             "flags": "SS_DISABLE" if not st.sas_ss_size else "enabled"},
                "delivered": st.delivered, "sigreturns": st.returned}


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
