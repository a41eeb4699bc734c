"""kill / tgkill / tkill / rt_sig* / sigaltstack <-> kernel/signal.c's syscalls.

Generation, delivery and the signal state are in the kernel/signal package; this module holds
the syscall entries: sending (``sys_kill`` follows kill_something_info), the actions and
masks, rt_sigsuspend, rt_sigtimedwait and sigaltstack.  ``sys_rt_sigreturn`` is the arch's
rt_sigreturn (arch/*/kernel/signal.c), dispatched to the arch's signal module, which restores
the frame.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel import pid as kpid
from emukern.kernel.signal import base as signal_base
from emukern.kernel.signal import delivery as signal_delivery
from emukern.kernel.signal import generate as signal_generate
from emukern.kernel.signal import syscalls as signal_syscalls
from emukern.kernel.signal.defs import (
    ALL_SIGS,
    ERESTARTNOHAND,
    NSIG,
    SA_EXPOSE_TAGBITS,
    SA_NOCLDSTOP,
    SA_NOCLDWAIT,
    SA_NODEFER,
    SA_ONSTACK,
    SA_RESETHAND,
    SA_RESTART,
    SA_RESTORER,
    SA_SIGINFO,
    SI_TKILL,
    SIG_BLOCK,
    SIG_DFL,
    SIG_IGN,
    SIG_KERNEL_IGNORE,
    SIG_KERNEL_ONLY,
    SIG_SETMASK,
    SIG_UNBLOCK,
    s32,
    sigmask,
)
from emukern.kernel.signal.state import KSigInfo, SigAction, init_task_signals
from emukern.kernel.sysret import BLOCK

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_kill(k: "Kernel", cpu, task, pid, sig, *a):
    """kill_something_info: pid > 0 a process (any of its thread ids names it), 0 the caller's
    process group, -1 every process but init and the caller, < -1 the process group -pid."""
    if task.sighand is None:
        init_task_signals(task)
    pid, sig = s32(pid), sig & 0xFFFFFFFF       # (s32(sig), inline: negative is out of range too)
    cpu.charge(k.cost.syscall_body)
    if sig > NSIG:
        return -E.EINVAL
    if pid > 0:
        t = kpid.find_task_by_vpid(k, task, pid)        # (the caller's pid namespace's number)
        tgt = signal_generate._group_target(k, t) if t is not None else None
        if tgt is None:
            return -E.ESRCH
        return signal_generate.send_signal(k, cpu, tgt, signal_generate._kill_info(k, task, sig, to=tgt), True) if sig else 0
    if pid == -1 and task.pid_ns is not None:
        # every process the caller's namespace sees, but its init and the caller
        targets = [p for p in signal_generate._processes(k)
                   if kpid.pid_nr_ns(k, p, task.pid_ns) not in (0, 1) and p.tgid != task.tgid]
    elif pid == -1:
        targets = [p for p in signal_generate._processes(k) if p.tgid not in (1, task.tgid)]
    else:
        pgid = task.signal.pgid if pid == 0 else -pid
        targets = [p for p in signal_generate._processes(k) if p.signal is not None and p.signal.pgid == pgid]
    targets = [g for g in (signal_generate._group_target(k, p) for p in targets) if g is not None]
    if not targets:
        return -E.ESRCH
    if sig:
        for t in targets:
            signal_generate.send_signal(k, cpu, t, signal_generate._kill_info(k, task, sig), True)
    return 0


def sys_tgkill(k: "Kernel", cpu, task, tgid, tid, sig, *a):
    if s32(tgid) <= 0:
        return -E.EINVAL
    return signal_generate._tkill(k, cpu, task, s32(tgid), s32(tid), s32(sig))


def sys_tkill(k: "Kernel", cpu, task, tid, sig, *a):
    return signal_generate._tkill(k, cpu, task, 0, s32(tid), s32(sig))


KERNEL_SIGINFO = 48     # sizeof(struct kernel_siginfo): the part of a user's siginfo that is kept


def _queued_info(task, sig: int, uinfo: int) -> KSigInfo:
    """__copy_siginfo_from_user: the sender's siginfo, its si_signo replaced by ``sig``.  The
    fields the kernel's own readers use (signalfd, sigtimedwait) are taken from it too."""
    raw = task.mm.read(uinfo, KERNEL_SIGINFO)
    return KSigInfo(sig, int.from_bytes(raw[8:12], "little", signed=True),
                    errno=int.from_bytes(raw[4:8], "little", signed=True),
                    pid=int.from_bytes(raw[12:16], "little", signed=True),
                    uid=int.from_bytes(raw[16:20], "little"),
                    value=int.from_bytes(raw[24:32], "little"), raw=raw)


def _may_forge(task, info: KSigInfo, pid: int) -> bool:
    """A user siginfo may not claim to come from the kernel (si_code >= 0) or from tkill
    (SI_TKILL adds the sender's identity) -- unless it is sent to the caller itself."""
    return not (info.code >= 0 or info.code == SI_TKILL) or pid == task.tid


def sys_rt_sigqueueinfo(k: "Kernel", cpu, task, pid, sig, uinfo, *a):
    signal_base._sig_init(k, task)
    pid, sig = s32(pid), s32(sig)
    info = _queued_info(task, sig, uinfo)
    if not _may_forge(task, info, pid):
        return -E.EPERM
    t = kpid.find_task_by_vpid(k, task, pid)    # kill_proc_info: POSIX.1b names a process, never a group
    tgt = signal_generate._group_target(k, t) if t is not None else None
    if tgt is None:
        return -E.ESRCH
    if not 0 <= sig <= NSIG:
        return -E.EINVAL
    return signal_generate.send_signal(k, cpu, tgt, info, True) if sig else 0


def sys_rt_tgsigqueueinfo(k: "Kernel", cpu, task, tgid, tid, sig, uinfo, *a):
    """do_rt_tgsigqueueinfo: rt_sigqueueinfo aimed at one thread, as tgkill aims kill."""
    signal_base._sig_init(k, task)
    tgid, tid, sig = s32(tgid), s32(tid), s32(sig)
    info = _queued_info(task, sig, uinfo)
    if tid <= 0 or tgid <= 0:
        return -E.EINVAL
    if not _may_forge(task, info, tid):
        return -E.EPERM
    t = kpid.find_task_by_vpid(k, task, tid)    # do_send_specific
    if t is None or not t.alive or kpid.task_tgid_vnr(k, t, task) != tgid:
        return -E.ESRCH
    if not 0 <= sig <= NSIG:
        return -E.EINVAL
    return signal_generate.send_signal(k, cpu, t, info, False) if sig else 0


def sys_rt_sigreturn(k: "Kernel", cpu, task, *a):
    if task.sighand is None:
        init_task_signals(task)
    cpu.charge(k.cost.syscall_body)
    k._in_handler = True
    try:
        return (k._arch_sig_mod or signal_delivery._arch_signal(k)).sys_rt_sigreturn(k, cpu, task)
    finally:
        k._in_handler = False


def sys_rt_sigaction(k: "Kernel", cpu, task, sig, act, oldact, sigsetsize, *a):
    sig = s32(sig)
    """do_sigaction: SIGKILL/SIGSTOP cannot be caught or ignored; setting SIG_IGN (or SIG_DFL
    of an ignored signal) discards it from every pending set of the process."""
    signal_base._sig_init(k, task)
    cpu.charge(k.cost.syscall_body)
    if sigsetsize != 8:
        return -E.EINVAL
    if not 1 <= sig <= NSIG or (act and sigmask(sig) & SIG_KERNEL_ONLY):
        return -E.EINVAL
    restorer = k.arch.HAS_SA_RESTORER
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
            for t in signal_base._threads(k, task):
                t.sigstate.pending.flush(sigmask(sig))
                signal_base.recalc_sigpending(k, t)
    return 0


def sys_rt_sigprocmask(k: "Kernel", cpu, task, how, nset, oset, sigsetsize, *a):
    st = signal_base._sig_init(k, task)
    cpu.charge(k.cost.syscall_body)
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
        signal_syscalls.set_current_blocked(k, task, new)
    return 0


def sys_rt_sigpending(k: "Kernel", cpu, task, uset, sigsetsize, *a):
    st = signal_base._sig_init(k, task)
    if sigsetsize > 8:
        return -E.EINVAL
    pend = (st.pending.signal | task.signal.shared_pending.signal) & st.blocked
    task.mm.write(uset, pend.to_bytes(8, "little")[:sigsetsize])
    return 0


def sys_rt_sigsuspend(k: "Kernel", cpu, task, unewset, sigsetsize, *a):
    """Wait with a temporary mask; always -EINTR once a handler ran (ERESTARTNOHAND); the
    old mask comes back when the handler's frame has saved it (saved_sigmask)."""
    st = signal_base._sig_init(k, task)
    if st.in_wait == "sigsuspend":
        if task.sigpending:
            st.in_wait = ""
            return -ERESTARTNOHAND
        k.sched.block_current(cpu, task, "rt_sigsuspend")
        return BLOCK
    if sigsetsize != 8:
        return -E.EINVAL
    m = task.mm.read_u64(unewset)
    st.saved_sigmask = st.blocked
    signal_syscalls.set_current_blocked(k, task, m)
    if task.sigpending:
        return -ERESTARTNOHAND
    st.in_wait = "sigsuspend"
    task.waitqueues = []
    k.sched.block_current(cpu, task, "rt_sigsuspend")
    return BLOCK


def sys_rt_sigtimedwait(k: "Kernel", cpu, task, uthese, uinfo, uts, sigsetsize, *a):
    """Take a signal of the set synchronously: its number (and siginfo), -EAGAIN on
    timeout, -EINTR when another signal's handler interrupts the wait."""
    st = signal_base._sig_init(k, task)
    if st.in_wait == "sigtimedwait":
        timed_out = task.woken_value == -E.ETIMEDOUT
        task.woken_value = None
        these = st.wait_set
        st.blocked = st.wait_real_blocked
        st.in_wait = ""
        info = signal_delivery.dequeue_signal(k, task, ~these & ALL_SIGS)
        signal_base.recalc_sigpending(k, task)
        if info is not None:
            return signal_syscalls._sigwait_done(k, task, info, uinfo)
        if timed_out:
            return -E.EAGAIN
        if task.sigpending:
            return -E.EINTR
        # spurious wake-up: wait again
    if sigsetsize != 8:
        return -E.EINVAL
    these = task.mm.read_u64(uthese) & ~SIG_KERNEL_ONLY
    info = signal_delivery.dequeue_signal(k, task, ~these & ALL_SIGS)
    signal_base.recalc_sigpending(k, task)
    if info is not None:
        return signal_syscalls._sigwait_done(k, task, info, uinfo)
    target = None
    if uts:
        raw = task.mm.read(uts, 16)
        sec, nsec = int.from_bytes(raw[:8], "little", signed=True), int.from_bytes(raw[8:], "little", signed=True)
        if sec < 0 or not 0 <= nsec < 10**9:
            return -E.EINVAL
        if sec == 0 and nsec == 0:
            return -E.EAGAIN
        target = cpu.now + k.clock.cycles_for_ns(sec * 10**9 + nsec)
    st.wait_set = these
    st.wait_real_blocked = st.blocked
    st.blocked = st.blocked & ~these
    signal_base.recalc_sigpending(k, task)
    st.in_wait = "sigtimedwait"
    task.waitqueues = []
    if target is not None:
        k.sched.add_timer(task, target)
    k.sched.block_current(cpu, task, "rt_sigtimedwait")
    return BLOCK


def sys_sigaltstack(k: "Kernel", cpu, task, uss, uoss, *a):
    return signal_syscalls.do_sigaltstack(k, cpu, task, uss, uoss, signal_syscalls._user_sp(k, cpu))
