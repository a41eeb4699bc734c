"""Job control — mirrors do_signal_stop / do_signal_continue (kernel/signal.c): group stop,
SIGCONT, orphaned process groups."""
from __future__ import annotations

import struct

from typing import TYPE_CHECKING, Any

from emukern.errors import MemoryFault
from emukern.kernel import errno as E
from emukern.kernel import pid as kpid
from emukern.kernel.signal.defs import *            # noqa: F401,F403  (the uapi numbers)
from emukern.kernel.signal.defs import _mask        # noqa: F401
from emukern.kernel.signal.state import *           # noqa: F401,F403

from emukern.kernel.task import Task, TaskState      # noqa: F401

if TYPE_CHECKING:
    from emukern.machine.cpu_base import Cpu
    from emukern.machine.trap import Trap
from emukern.kernel import errno as E
from emukern.kernel.fs.pidfs import PidFdFile
from emukern.kernel.signal import base as signal_base
from emukern.kernel.signal import delivery as signal_delivery
from emukern.kernel.signal import exit as signal_exit
from emukern.kernel.signal import generate as signal_generate
from emukern.kernel.signal.defs import CLD_CONTINUED
from emukern.kernel.signal.defs import CLD_DUMPED
from emukern.kernel.signal.defs import CLD_EXITED
from emukern.kernel.signal.defs import CLD_KILLED
from emukern.kernel.signal.defs import CLD_STOPPED
from emukern.kernel.signal.defs import SA_NOCLDSTOP
from emukern.kernel.signal.defs import SIGCHLD
from emukern.kernel.signal.defs import SIGCONT
from emukern.kernel.signal.defs import SIG_IGN
from emukern.kernel.signal.defs import SIG_KERNEL_COREDUMP
from emukern.kernel.signal.defs import WCONTINUED
from emukern.kernel.signal.defs import WEXITED
from emukern.kernel.signal.defs import WNOHANG
from emukern.kernel.signal.defs import WNOWAIT
from emukern.kernel.signal.defs import WSTOPPED
from emukern.kernel.signal.defs import WUNTRACED
from emukern.kernel.signal.defs import sigmask
from emukern.kernel.signal.defs import signal_name
from emukern.kernel.signal.state import KSigInfo
from emukern.kernel.signal.state import init_task_signals
from emukern.kernel.uapi import _s32
from emukern.kernel.task import Task
from emukern.kernel.task import TaskState
from typing import Any
if TYPE_CHECKING:
    from emukern.kernel.types import Kernel
    from emukern.machine.cpu_base import Cpu
    from emukern.machine.trap import Trap



_WAITID_HEAD = struct.Struct("<iii")             # si_signo, si_errno, si_code
_WAITID_CHLD = struct.Struct("<iIi")             # si_pid, si_uid, si_status


def _parked(t: Task) -> bool:
    return t.state is TaskState.BLOCKED and t.wait_reason.startswith("stopped")


# ---- job control: group stop and continue ------------------------------------------------
def is_current_pgrp_orphaned(k: "Kernel", task: Task) -> bool:
    """A process group is orphaned when no member has a parent in another group of the same
    session (emukern's first process has no parent: its group is orphaned)."""
    pgid = task.signal.pgid
    for p in signal_generate._processes(k):
        if p.signal is None or p.signal.pgid != pgid:
            continue
        par = p.parent
        if par is not None and par.signal is not None and par.signal.pgid != pgid \
                and par.signal.sid == p.signal.sid:
            return False
    return True


def do_signal_stop(k: "Kernel", cpu: "Cpu", task: Task, sig: int, trap: "Trap | None") -> None:
    """The group stops: every thread parks (TASK_STOPPED, shown as blocked 'stopped') at its
    next return to user mode until SIGCONT or SIGKILL.  The thread that completes the stop
    (the last one to park) records the signal for wait4(WUNTRACED) and tells the parent
    (do_notify_parent_cldstop, CLD_STOPPED), as Linux's do_signal_stop does."""
    sigs = task.signal
    if not sigs.stop_pending:
        sigs.stop_pending = sig
        for t in signal_base._threads(k, task):
            if t is not task:
                t.sigpending = True
                signal_generate.signal_wake_up_state(k, cpu, t)
    signal_delivery._log_signal(k, cpu, task, f"{signal_name(sig)}: group stop (the thread parks until SIGCONT)", trap)
    sigs.stopped = True
    if all(t is task or _parked(t) for t in signal_base._threads(k, task)):
        # the group stop is complete: SIGNAL_STOP_STOPPED with group_exit_code = the signal
        sigs.group_exit_code = sigs.stop_pending
        sigs.stop_continued = False
        do_notify_parent_cldstop(k, cpu, task, CLD_STOPPED, trap)
    task.waitqueues = []
    k.sched.block_current(cpu, task, f"stopped ({signal_name(sig)})")


def do_notify_parent_cldstop(k: "Kernel", cpu: "Cpu", task: Task, why: int, trap: "Trap | None" = None) -> None:
    """SIGCHLD with CLD_STOPPED (si_status = the stop signal) or CLD_CONTINUED (SIGCONT) to
    the parent process — unless its SIGCHLD action is SIG_IGN or has SA_NOCLDSTOP — and a
    wake-up of a parent sleeping in wait4 either way (__wake_up_parent).  The siginfo
    describes the group leader, as Linux's does."""
    leader = k.tasks.get(task.tgid) or task
    parent = leader.parent
    if parent is None:
        return
    parent = signal_generate._group_target(k, parent) or parent
    if not parent.alive:
        return
    status = leader.signal.group_exit_code & 0x7F if why == CLD_STOPPED else SIGCONT
    hz = k.clock.tick_cycles
    info = KSigInfo(SIGCHLD, why, pid=leader.tgid, status=status, utime=leader.utime // hz,
                    stime=leader.stime // hz)
    if parent.sighand is None:
        init_task_signals(parent)
    ka = parent.sighand.action[SIGCHLD]
    sent = ka.handler != SIG_IGN and not ka.flags & SA_NOCLDSTOP
    if sent:
        signal_generate.send_signal(k, cpu, parent, info, True)
    signal_delivery._log_signal(k, cpu, task, f"do_notify_parent_cldstop: {'CLD_STOPPED' if why == CLD_STOPPED else 'CLD_CONTINUED'}"
                                f" to pid {parent.tgid}" + ("" if sent else " (no SIGCHLD: SA_NOCLDSTOP/SIG_IGN)"), trap)
    wq = k.child_wait.get(parent.tgid)
    if wq:
        k.sched.wake_queue(wq, cpu.now)


def wait_task_stopped_continued(k: "Kernel", task: Task, child: Task, options: int, status_ptr: int) -> int:
    """wait_task_stopped / wait_task_continued for one child process (wait4): its pid when it
    reports a stop (WUNTRACED: status = signal << 8 | 0x7f, WIFSTOPPED) or a continue
    (WCONTINUED: status 0xffff, WIFCONTINUED), each reported once; 0 otherwise."""
    sigs = child.signal
    if sigs is None:
        return 0
    if options & WUNTRACED and sigs.stopped and sigs.group_exit_code:
        status = (sigs.group_exit_code << 8) | 0x7F
        if not options & WNOWAIT:
            sigs.group_exit_code = 0
    elif options & WCONTINUED and sigs.stop_continued:
        status = 0xFFFF
        if not options & WNOWAIT:
            sigs.stop_continued = False
    else:
        return 0
    if status_ptr:
        task.mm.write_u32(status_ptr, status)
    return child.tgid


def do_coredump(k: "Kernel", cpu: "Cpu", task: Task, info: KSigInfo, trap: "Trap | None" = None) -> bool:
    """get_signal -> do_coredump for a signal whose default action is core: the ELF core file
    (kernel/coredump.py) when RLIMIT_CORE allows at least binfmt_elf's min_coredump (a page;
    Linux's init starts everything with RLIMIT_CORE 0) and the working directory can take
    it.  True only when the whole core was written: the wait status gets WCOREDUMP (0x80)."""
    if not sigmask(info.signo) & SIG_KERNEL_COREDUMP:
        return False
    from emukern.kernel.signal.coredump import do_coredump
    dumped, why = do_coredump(k, cpu, task, info)
    if why is not None:
        signal_delivery._log_signal(k, cpu, task, f"{signal_name(info.signo)}: {why}", trap)
    return dumped


def do_signal_continue(k: "Kernel", cpu: "Cpu", t: Task, sig: int = SIGCONT) -> None:
    """SIGCONT (or SIGKILL) resumes a stopped group.  For SIGCONT, as prepare_signal does:
    SIGNAL_STOP_CONTINUED for wait4(WCONTINUED) and the parent told CLD_CONTINUED — or
    CLD_STOPPED when the stop had not completed yet."""
    sigs = t.signal
    if not sigs.stop_pending and not sigs.stopped:
        return
    threads = signal_base._threads(k, t)
    complete = sigs.stopped and all(_parked(th) for th in threads)
    sigs.stop_pending = 0
    sigs.stopped = False
    if sig == SIGCONT:
        sigs.group_exit_code = 0
        sigs.stop_continued = True
    parked = [th for th in threads if _parked(th)]
    for th in parked:
        k.sched.wake_up(th, cpu.now)
    if sig == SIGCONT:
        # prepare_signal only records why (SIGNAL_CLD_CONTINUED / SIGNAL_CLD_STOPPED); the
        # parent hears of it when a thread of the group next runs get_signal -- a woken
        # thread does at once (it was parked inside get_signal), one not yet parked because
        # it still has TIF_SIGPENDING from the stop -- so the SIGCHLD comes from the child's
        # side, after it got the CPU, not from inside the kill()
        sigs.cld_notify = CLD_CONTINUED if complete else CLD_STOPPED
        for th in parked or threads:
            th.sigpending = True


def _waitid(k: "Kernel", cpu, task: Task, idtype: int, upid: int, infop: int, options: int,
            probe: bool = False, ru: int = 0) -> int | None:
    """One pass of do_wait for waitid: the return value, or None when it would sleep (or,
    for a ``probe`` after a signal woke the caller, when no child had anything to report).
    ``ru``: where the reported child's rusage goes (only when a child is reported)."""
    P_ALL, P_PID, P_PGID, P_PIDFD = 0, 1, 2, 3
    pidfd_nonblock = False
    if options & ~(WNOHANG | WEXITED | WSTOPPED | WCONTINUED | WNOWAIT | 0xE0000000) \
            or not options & (WEXITED | WSTOPPED | WCONTINUED):
        return -E.EINVAL
    if idtype == P_ALL:
        def match(c: Task) -> bool:
            return True
    elif idtype == P_PID:
        if upid <= 0:
            return -E.EINVAL

        def match(c: Task) -> bool:
            return c.tgid == upid if task.pid_ns is None else kpid.task_tgid_vnr(k, c, task) == upid
    elif idtype == P_PGID:
        if upid < 0:
            return -E.EINVAL
        pgid = upid or task.signal.pgid

        def match(c: Task) -> bool:
            return c.signal is not None and c.signal.pgid == pgid
    elif idtype == P_PIDFD:
        # the child a pidfd names (pidfd_get_pid): a descriptor that is no pidfd is EBADF, and
        # a non-blocking pidfd makes the wait non-blocking too (EAGAIN instead of sleeping)
        if upid < 0:
            return -E.EINVAL
        f = task.files.get(upid) if task.files is not None else None
        if not isinstance(f, PidFdFile):
            return -E.EBADF
        tgid = f.task.tgid
        pidfd_nonblock = f.nonblock

        def match(c: Task) -> bool:
            return c.tgid == tgid
    else:
        return -E.EINVAL
    parent = k.tasks.get(task.tgid, task)
    kids = [c for c in parent.children if c.state != TaskState.DEAD and match(c)
            and signal_exit.eligible_child(c, options)]
    if not kids:
        return -E.ECHILD
    for c in kids:
        sigs = c.signal
        if c.state == TaskState.ZOMBIE and options & WEXITED and \
                not any(t.alive for t in k.tasks.values() if t.tgid == c.tgid):
            err = signal_exit.put_child_rusage(k, task, c, ru)    # (before release_task)
            st = c.exit_code
            code, status = ((CLD_DUMPED if st & 0x80 else CLD_KILLED, st & 0x7F) if st & 0x7F
                            else (CLD_EXITED, (st >> 8) & 0xFF))
            if not options & WNOWAIT:
                signal_exit.release_zombie(k, task, c)
        elif options & WSTOPPED and sigs is not None and sigs.stopped and sigs.group_exit_code:
            code, status = CLD_STOPPED, sigs.group_exit_code
            if not options & WNOWAIT:
                sigs.group_exit_code = 0
        elif options & WCONTINUED and sigs is not None and sigs.stop_continued:
            code, status = CLD_CONTINUED, SIGCONT
            if not options & WNOWAIT:
                sigs.stop_continued = False
        else:
            continue
        if code not in (CLD_EXITED, CLD_KILLED, CLD_DUMPED):
            err = signal_exit.put_child_rusage(k, task, c, ru)
        # sys_waitid copies the rusage out before the siginfo: a bad pointer is -EFAULT with
        # the child already consumed (reaped, or its stop/continue reported) and infop unwritten
        return err or _put_waitid(k, task, infop, SIGCHLD, code, kpid.task_tgid_vnr(k, c, task), status)
    if options & WNOHANG and not probe:
        return _put_waitid(k, task, infop, 0, 0, 0, 0)
    if pidfd_nonblock and not probe:
        return _put_waitid(k, task, infop, 0, 0, 0, 0) or -E.EAGAIN
    return None


def _put_waitid(k: "Kernel", task: Task, infop: int, signo: int, code: int, pid: int, status: int) -> int:
    if infop:
        try:
            task.mm.write(infop, _WAITID_HEAD.pack(signo, 0, code))
            task.mm.write(infop + 16, _WAITID_CHLD.pack(pid, 0, status))
        except MemoryFault:           # a bad user pointer
            return -E.EFAULT
    return 0
