"""Delivering signals on the way back to user mode — mirrors arch_do_signal_or_restart and
get_signal (kernel/signal.c): dequeue, the default actions, handle_signal with the arch's
setup_rt_frame, rt_sigreturn, the ERESTART* codes of interrupted syscalls, the debugger view."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emukern.errors import MemoryFault
from emukern.kernel import errno as E
from emukern.kernel.signal.defs import *            # noqa: F401,F403  (the uapi numbers)
from emukern.kernel.signal.defs import _mask        # noqa: F401
from emukern.kernel.signal.state import *           # noqa: F401,F403

from emukern.kernel.task import Task, TaskState      # noqa: F401
from emukern.machine.trap import note_text

if TYPE_CHECKING:
    from emukern.machine.cpu_base import Cpu
    from emukern.machine.trap import Trap
from emukern.kernel import errno as E
from emukern.kernel.signal import base as signal_base
from emukern.kernel.signal import exit as signal_exit
from emukern.kernel.signal import generate as signal_generate
from emukern.kernel.signal import jobctl as signal_jobctl
from emukern.kernel.signal import rseq as signal_rseq
from emukern.kernel.signal import syscalls as signal_syscalls
from emukern.kernel.signal.defs import ERESTARTNOHAND
from emukern.kernel.signal.defs import ERESTARTSYS
from emukern.kernel.signal.defs import ERESTART_RESTARTBLOCK
from emukern.kernel.signal.defs import NSIG
from emukern.kernel.signal.defs import SA_NODEFER
from emukern.kernel.signal.defs import SA_RESETHAND
from emukern.kernel.signal.defs import SA_RESTART
from emukern.kernel.signal.defs import SIGKILL
from emukern.kernel.signal.defs import SIGSEGV
from emukern.kernel.signal.defs import SIGSTOP
from emukern.kernel.signal.defs import SIG_DFL
from emukern.kernel.signal.defs import SIG_IGN
from emukern.kernel.signal.defs import SIG_KERNEL_ONLY
from emukern.kernel.signal.defs import SIG_WAKE
from emukern.kernel.signal.defs import SI_KERNEL
from emukern.kernel.signal.defs import SI_TKILL
from emukern.kernel.signal.defs import SI_USER
from emukern.kernel.signal.defs import SYNCHRONOUS_MASK
from emukern.kernel.signal.defs import default_action
from emukern.kernel.signal.defs import s32
from emukern.kernel.signal.defs import sigmask
from emukern.kernel.signal.defs import signal_name
from emukern.kernel.signal.state import KSigInfo
from emukern.kernel.signal.state import SigAction
from emukern.kernel.signal.state import SigPending
from emukern.kernel.signal.state import SignalEvent
from emukern.kernel.signal.state import init_task_signals
from emukern.kernel.task import Task
from emukern.kernel.thread_info import TIF_SIGPENDING
from emukern.machine.trap import note_text
from typing import Any
if TYPE_CHECKING:
    from emukern.kernel.types import Kernel
    from emukern.machine.cpu_base import Cpu
    from emukern.machine.trap import Trap


def _deliver_text(signo: int, code: int, handler: int, frame_note: Any) -> str:
    """handle_signal's trap-log note, made when the log is read (machine.trap.note_text)."""
    return f"deliver {signal_name(signo)} (code {code}) to handler {handler:#x}: {note_text(frame_note)}"


# ---- delivery: exit_to_user_mode_loop -> arch_do_signal_or_restart ------------------------
def next_signal(t: Task, mask: int) -> "tuple[SigPending, int] | None":
    """next_signal: the set and number of the signal get_signal takes next among those not
    in ``mask`` — synchronous ones first, the thread's own set before the process's; None
    when none is deliverable."""
    for pending in (t.sigstate.pending, t.signal.shared_pending):
        avail = pending.signal & ~mask
        if avail:
            bits = avail & SYNCHRONOUS_MASK or avail
            return pending, (bits & -bits).bit_length()
    return None


def dequeue_signal(k: "Kernel", t: Task, mask: int) -> KSigInfo | None:
    """The next signal (next_signal), taken off its pending set."""
    nxt = next_signal(t, mask)
    return None if nxt is None else nxt[0].take(nxt[1])


def deliver_to_handler(k: "Kernel", cpu: "Cpu", task: Task, notes: "Trap | list[Any] | None") -> bool:
    """get_signal's common case, tried first (by do_signal, and by the syscall fast path's exit
    before it: its note then goes to the syscall's own record): no generic work is
    due (no syscall restart to resolve, no CLD_* report for the parent, no group stop, no
    tracer: the four are tested together) and the signal get_signal would dequeue next —
    next_signal: synchronous ones first, the thread's own set before the process's — has a
    user handler.  Then it is dequeued and handle_signal builds its frame, the trap-log note
    going to ``notes`` (where _log_signal puts it: the Trap being handled, or the log).
    False, with nothing changed, when anything else is to be done: do_signal's general steps."""
    st = task.sigstate
    sigs = task.signal
    if st.restart is not None or sigs.cld_notify or sigs.stop_pending or task.ptrace is not None:
        return False
    nxt = next_signal(task, st.blocked)
    if nxt is None:
        return False
    pending, sig = nxt
    ka = task.sighand.action[sig]
    if ka.handler <= SIG_IGN:           # SIG_DFL / SIG_IGN: the default actions' path
        return False
    info = pending.take(sig)
    # (dequeue_signal's recalc_sigpending is left to handle_signal: its signal_delivered
    # recalculates TIF_SIGPENDING after blocking the mask, and so does the forced SIGSEGV of
    # a frame that cannot be written — nothing reads the flag in between)
    handle_signal(k, cpu, task, info, ka, notes)
    return True


def do_signal(k: "Kernel", cpu: "Cpu", task: Task, trap: "Trap | None" = None) -> None:
    """arch_do_signal_or_restart: resolve a pending syscall restart, then deliver every
    deliverable signal (each handler's frame stacks on the previous one, so the last one
    runs first, as in Linux's loop over TIF_SIGPENDING).  The common case -- a signal for a
    user handler and nothing else due -- goes through deliver_to_handler first."""
    st = task.sigstate
    if task.flags & TIF_SIGPENDING and deliver_to_handler(k, cpu, task, trap):
        # (it found no restart, CLD_* report or group stop: the steps below that act on them
        # would do nothing, so a second pending signal goes straight to the loop)
        if not task.flags & TIF_SIGPENDING:
            return
        _deliver_pending(k, cpu, task, trap, None, True)
        return
    restart = st.restart
    st.restart = None
    if restart is not None:
        nr, args, code = restart
        # prepare for the restart: a0/x0 back to its original value, pc back at ecall/svc
        cpu.set_reg(k.arch.SYSCALL_ARG0_REG, args[0])
        cpu.set_pc(cpu.get_pc() - 4)
    why = task.signal.cld_notify
    if why:
        # get_signal's first check: SIGCONT ended (or cut short) a group stop of this process
        task.signal.cld_notify = 0
        signal_jobctl.do_notify_parent_cldstop(k, cpu, task, why, trap)
    if task.signal.stop_pending and not task.signal.group_exit:
        # another thread started a group stop: park here (a restart is already prepared)
        signal_jobctl.do_signal_stop(k, cpu, task, task.signal.stop_pending, trap)
        return
    _deliver_pending(k, cpu, task, trap, restart, False)


def _deliver_pending(k: "Kernel", cpu: "Cpu", task: Task, trap: "Trap | None",
                     restart: "tuple[int, tuple[int, ...], int] | None", handled: bool) -> None:
    """do_signal's loop over TIF_SIGPENDING (``restart``: the syscall restart being resolved;
    ``handled``: a handler's frame is already set up)."""
    st = task.sigstate
    while task.sigpending:
        info = dequeue_signal(k, task, st.blocked)
        signal_base.recalc_sigpending(k, task)
        if info is None:
            break
        sig = info.signo
        if task.ptrace is not None and sig != SIGKILL:
            from emukern.kernel.signal.ptrace import ptrace_signal
            if ptrace_signal(k, cpu, task, info, trap):
                return          # a ptrace-stop: the tracer decides what is delivered
        ka = task.sighand.action[sig]
        if ka.handler == SIG_IGN:
            continue
        if ka.handler == SIG_DFL:
            act = default_action(sig)
            if act == "ignore":
                continue
            if act == "stop":
                if sig != SIGSTOP and signal_jobctl.is_current_pgrp_orphaned(k, task):
                    continue        # Linux: no terminal stops for an orphaned process group
                signal_jobctl.do_signal_stop(k, cpu, task, sig, trap)
                return
            _fatal_signal(k, cpu, task, info, trap)
            return
        if restart is not None:
            code = restart[2]
            if code in (ERESTARTNOHAND, ERESTART_RESTARTBLOCK) or (
                    code == ERESTARTSYS and not ka.flags & SA_RESTART):
                cpu.set_reg(k.arch.SYSCALL_ARG0_REG, (-E.EINTR) & (2**64 - 1))
                cpu.set_pc(cpu.get_pc() + 4)
            restart = None
        handle_signal(k, cpu, task, info, ka, trap)
        handled = True
    if restart is not None and restart[2] == ERESTART_RESTARTBLOCK:
        pass        # restart_syscall: emukern re-runs the call itself (same arguments)
    if not handled and st.saved_sigmask is not None:
        st.blocked = st.saved_sigmask           # restore_saved_sigmask
        st.saved_sigmask = None
        signal_base.recalc_sigpending(k, task)


def handle_signal(k: "Kernel", cpu: "Cpu", task: Task, info: KSigInfo, ka: SigAction,
                  trap: "Trap | list[str] | None") -> None:
    """signal_setup_done after the arch's setup_rt_frame.  ``trap``: where the trap-log note
    goes (see _log_signal)."""
    st = task.sigstate
    oldset = st.saved_sigmask if st.saved_sigmask is not None else st.blocked
    cpu.charge(k.cost.signal_deliver)
    if task.rseq is not None:     # rseq_signal_deliver: a critical section restarts at its abort handler
        signal_rseq.rseq_signal_deliver(k, cpu, task, info.signo)
    # the arch's setup_rt_frame: its trap-log note (see note_text), None if it failed
    note = (k._arch_sig_mod or _arch_signal(k)).setup_rt_frame(k, cpu, task, info, ka, oldset)
    if note is None:
        # signal_setup_done(failed): the frame could not be written -> force SIGSEGV
        _log_signal(k, cpu, task, f"{signal_name(info.signo)}: cannot write the signal frame: SIGSEGV",
                         trap)
        task.sighand.action[SIGSEGV].handler = SIG_DFL
        signal_generate.force_sig_info(k, cpu, task, KSigInfo(SIGSEGV, SI_KERNEL, report={
            "signal": SIGSEGV, "signame": "SIGSEGV", "tid": task.tid,
            "why": f"could not write the frame for {signal_name(info.signo)} (stack unusable)"}))
        return
    if st.sas_ss_flags & SS_AUTODISARM:
        # the frame kept the alternate stack (uc_stack); the handler runs with none, so it may
        # switch contexts away from it, and rt_sigreturn restores it from the frame
        st.sas_ss_sp, st.sas_ss_size, st.sas_ss_flags = 0, 0, SS_DISABLE
    # signal_delivered: block sa_mask (+ the signal unless SA_NODEFER), SA_RESETHAND
    st.saved_sigmask = None
    newblocked = oldset | ka.mask
    if not ka.flags & SA_NODEFER:
        newblocked |= 1 << (info.signo - 1)
    st.blocked = newblocked & ~SIG_KERNEL_ONLY
    if ka.flags & SA_RESETHAND:
        task.sighand.action[info.signo] = SigAction()
    st.delivered += 1
    signal_base.recalc_sigpending(k, task)
    _log_signal(k, cpu, task, (_deliver_text, info.signo, info.code, ka.handler, note), trap)
    for cb in k.signal_listeners:
        cb(cpu, task, info)


def _log_signal(k: "Kernel", cpu: "Cpu", task: Task, text: Any, trap: "Trap | list[Any] | None" = None) -> None:
    """A line in the trap log (``--trace traps``, the debugger's history): a note on the trap
    being handled, or an entry of its own when the delivery happens outside a trap (a
    context switch, the tick).  Lines written inside a syscall handler (rt_sigreturn) go to
    the kernel's ``syscall_notes``, which do_syscall adds to the syscall's trap.  A list is
    the notes of a syscall's record still being made (deliver_to_handler).  ``text`` is a
    note as machine.trap.note_text reads it: text, or a (function, values...) tuple."""
    if type(trap) is list:
        trap.append(text)
    elif trap is not None:
        if trap.notes is None:
            trap.notes = [text]
        else:
            trap.notes.append(text)
    elif k._in_handler:
        k.syscall_notes.append(text)  # do_syscall adds them to the trap
    else:
        k.log_trap(cpu, task, SignalEvent(cpu.get_pc(), note_text(text)))


def _fatal_signal(k: "Kernel", cpu: "Cpu", task: Task, info: KSigInfo, trap: "Trap | None") -> None:
    """do_group_exit(sig): the default action kills the whole thread group."""
    sig = info.signo
    report = info.report or {"signal": sig, "signame": signal_name(sig), "tid": task.tid,
                             "why": _why(info)}
    report["signal"], report["signame"] = sig, signal_name(sig)
    task.fault_report = report
    if k.fault_report is None:
        k.fault_report = report
    if trap is not None and not trap.decision:
        trap.decision = f"{signal_name(sig)}: {report.get('why', '')}"
    if trap is None or info.report is None:
        _log_signal(k, cpu, task, f"{signal_name(sig)}: default action {default_action(sig)}: "
                                    f"the thread group dies", trap)
    cpu.charge(k.cost.signal_deliver)
    # the wait status: the signal, with WCOREDUMP (0x80) when do_coredump would write a core
    core = 0x80 if signal_jobctl.do_coredump(k, cpu, task, info, trap) else 0
    signal_exit.do_group_exit(k, cpu, task, sig | core, signaled=True)


def _why(info: KSigInfo) -> str:
    if info.code == SI_USER:
        return f"killed by {signal_name(info.signo)} from pid {info.pid}"
    if info.code == SI_TKILL:
        return f"killed by {signal_name(info.signo)} (tkill) from pid {info.pid}"
    if info.code == SI_KERNEL:
        return f"{signal_name(info.signo)} sent by the kernel"
    return f"{signal_name(info.signo)} (si_code {info.code})"


def _arch_signal(k: "Kernel") -> Any:
    """kernel/arch/riscv/signal.py or kernel/arch/arm64/signal.py (looked up once: it is on the path
    of every delivery and rt_sigreturn)."""
    mod = k._arch_sig_mod
    if mod is None:
        mod = k._arch_sig_mod = k.arch.SIGNAL
    return mod


def signal_minsigstksz(k: "Kernel") -> int:
    """AT_MINSIGSTKSZ: the largest frame this machine's kernel can build (VLEN / SVE VL)."""
    return _arch_signal(k).signal_minsigstksz(k)


def sigtramp_addr(k: "Kernel") -> int:
    """Where map_sigtramp puts the trampoline page (fixed for the arch: worked out once, it
    is on every delivery's path)."""
    a = k._sigtramp
    if a is None:
        a = k._sigtramp = k.arch.STACK_TOP - k.arch.STACK_SIZE - 2 * 4096
    return a


def map_sigtramp(k: "Kernel", mm: Any) -> None:
    """The sigreturn trampoline page (Linux: the vDSO's __vdso_rt_sigreturn /
    __kernel_rt_sigreturn): a handler's return address when the program gave none."""
    words = _arch_signal(k).SIGTRAMP_WORDS
    mm.map(sigtramp_addr(k), 4096, "r-x", "[vdso]")
    mm.write(sigtramp_addr(k), b"".join(w.to_bytes(4, "little") for w in words), need="")


# ---- the blocked-syscall side: ERESTART* codes ---------------------------------------------
def syscall_interrupted(k: "Kernel", cpu: "Cpu", task: Task, nr: int, args: tuple[int, ...]) -> int | None:
    """A task a signal woke (woken_value SIG_WAKE) ends its sleep here instead of re-running
    the wait: the code says what ``do_signal`` does with the call (restart or -EINTR)."""
    if task.woken_value is not SIG_WAKE:
        return None
    name = k.syscall_name(nr)
    if name in ("futex", "futex_waitv"):
        return None     # re-run with SIG_WAKE kept: only the futex code knows if it was requeued
    task.woken_value = None
    if name in ("rt_sigsuspend", "rt_sigtimedwait"):
        return None                                 # they look at the pending set themselves
    if name in ("clone", "clone3") and task.vfork_child is not None:
        return None                 # wait_for_vfork_done is killable only (syscalls/fork.py)
    if name == "ppoll":
        task.sigstate.in_wait = ""
        return -ERESTARTNOHAND
    if name in ("epoll_pwait", "epoll_pwait2"):
        return None     # ep_poll's loop: ready events first, else -EINTR (never restarted)
    if name in ("semop", "semtimedop", "msgsnd", "msgrcv"):
        # SysV IPC sleeps (ipc/sem.c, ipc/msg.c): semop is never restarted, even under SA_RESTART
        return -E.EINTR if name.startswith("sem") else -ERESTARTNOHAND
    if name == "pselect6":                          # the time left written back too
        return signal_syscalls.pselect_interrupted(k, cpu, task, args)
    # A wait loop looks at its condition before at signal_pending (do_wait, pipe_read,
    # pipe_write): if what it waited for is there, the call completes normally.
    if name == "waitid":            # the same look at the children first
        ret = signal_jobctl._waitid(k, cpu, task, s32(args[0]), s32(args[1]), args[2], args[3] & 0xFFFFFFFF,
                           probe=True, ru=args[4])
        return ret if ret is not None else -ERESTARTSYS
    if name == "wait4":
        # a WNOHANG probe through the syscall table (wait4 is the syscall layer's, above this one)
        ret = k.syscall_handler(nr)(cpu, task, args[0], args[1], args[2] | 1, args[3], 0, 0)
        return ret if ret != 0 else -ERESTARTSYS
    if name in ("read", "write"):
        from emukern.kernel.files import PipeEnd
        f = task.files.get(s32(args[0])) if task.files is not None else None
        if isinstance(f, PipeEnd):
            p = f.pipe
            if (name == "read" and (p.buf or p.writers == 0)) or \
                    (name == "write" and (len(p.buf) < p.size or p.readers == 0)):
                return None
    if name in ("nanosleep", "clock_nanosleep"):
        st = task.sigstate
        target = st.sleep_target
        rem_ptr = args[1] if name == "nanosleep" else args[3]
        absolute = name == "clock_nanosleep" and args[1] & 1
        if rem_ptr and target is not None and not absolute:
            left = max(0, int(k.clock.ns(target) - k.clock.ns(cpu.now)))
            try:
                task.mm.write(rem_ptr, (left // 10**9).to_bytes(8, "little") + (left % 10**9).to_bytes(8, "little"))
            except MemoryFault:           # a bad user pointer
                return -E.EFAULT
        return -ERESTART_RESTARTBLOCK if not absolute else -ERESTARTNOHAND
    return -ERESTARTSYS


def note_restart(k: "Kernel", task: Task, nr: int, args: tuple[int, ...], ret: int) -> None:
    """Record an ERESTART* return so do_signal can resolve it (regs->a0 in Linux)."""
    if task.sighand is None:
        init_task_signals(task)
    task.sigstate.restart = (nr, args, -ret)
    task.sigpending = True          # make the return path look (TIF_SIGPENDING was set)


# ---- the debugger's view ----------------------------------------------------------------------
def signal_view(k: "Kernel", task: Task) -> dict[str, Any]:
    """Dispositions, pending and blocked sets and the alternate stack (``info signals``)."""
    signal_base._sig_init(k, task)
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
