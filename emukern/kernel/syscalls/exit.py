"""exit / exit_group / wait4 / waitid <-> kernel/exit.c's syscalls.

``sys_exit`` and ``sys_exit_group`` call do_exit/do_group_exit; the wait calls find a zombie,
stopped or continued child (or ptrace tracee) and reap or report it.  The exit path itself and
the rusage/reaping helpers are in kernel/signal/exit.py.  ``sys_waitid`` supports P_ALL, P_PID
and P_PGID with WEXITED, WSTOPPED, WCONTINUED, WNOWAIT and WNOHANG.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel import pid as kpid
from emukern.kernel.files import WaitQueue
from emukern.kernel.signal import exit as signal_exit
from emukern.kernel.signal import jobctl as signal_jobctl
from emukern.kernel.signal.defs import s32
from emukern.kernel.syscalls import WNOHANG
from emukern.kernel.sysret import BLOCK, s64
from emukern.kernel.task import TaskState
from emukern.kernel.signal.ptrace import ptrace_tracees, wait_task_traced
from emukern.kernel.sysret import BLOCK

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_exit(k: "Kernel", cpu, task, code, *a):
    signal_exit.do_exit(k, cpu, task, (code & 0xFF) << 8)
    return 0


def sys_exit_group(k: "Kernel", cpu, task, code, *a):
    signal_exit.do_group_exit(k, cpu, task, (code & 0xFF) << 8)
    return 0


def sys_wait4(k: "Kernel", cpu, task, pid, status_ptr, options, rusage, *a):
    pid = s64(pid)
    parent = k.tasks.get(task.tgid, task)
    # the numbers the caller passes and gets back are its own pid namespace's
    num = (lambda c: c.tid) if task.pid_ns is None else (lambda c: kpid.task_pid_vnr(k, c, task))
    kids = [c for c in parent.children if c.state != TaskState.DEAD and (pid <= 0 or num(c) == pid)
            and signal_exit.eligible_child(c, options)]
    traced = [t for t in ptrace_tracees(k, task.tgid) if pid <= 0 or t.tid == pid]
    if not kids and not traced:
        return -E.ECHILD
    for c in kids:
        if c.state == TaskState.ZOMBIE and not any(t.alive for t in k.tasks.values() if t.tgid == c.tgid):
            err = signal_exit.put_child_rusage(k, task, c, rusage)      # (before release_task)
            signal_exit.release_zombie(k, task, c)
            if status_ptr:
                task.mm.write_u32(status_ptr, c.exit_code)
            return err or num(c)
        jc = signal_jobctl.wait_task_stopped_continued(k, task, c, options, status_ptr)
        if jc:                      # WUNTRACED / WCONTINUED (kernel/signal/jobctl.py)
            return signal_exit.put_child_rusage(k, task, c, rusage) or (num(c) if jc > 0 else jc)
    # a tracee in a ptrace-stop is reported to its tracer even without WUNTRACED
    got = wait_task_traced(k, task, traced, status_ptr)
    if got:
        tracee = k.tasks.get(got)
        return (signal_exit.put_child_rusage(k, task, tracee, rusage) if tracee is not None else 0) \
            or (num(tracee) if tracee is not None and got > 0 else got)
    if options & WNOHANG:
        return 0
    wq = k.child_wait.setdefault(parent.tgid, WaitQueue("wait4"))
    k.sched.sleep_on(cpu, task, wq, "wait4")
    return BLOCK


# ---- waitid (kernel/exit.c: kernel_waitid, wait_task_zombie/stopped/continued) ----------
def sys_waitid(k: "Kernel", cpu, task, idtype, upid, infop, options, rusage, *a):
    """waitid: P_ALL / P_PID / P_PGID children; WEXITED, WSTOPPED (= WUNTRACED), WCONTINUED,
    WNOWAIT (the child stays waitable), WNOHANG (0 with a zeroed siginfo when none is
    ready).  The siginfo holds si_signo SIGCHLD, si_code CLD_*, si_pid, si_uid, si_status."""
    ret = signal_jobctl._waitid(k, cpu, task, s32(idtype), s32(upid), infop, options & 0xFFFFFFFF, ru=rusage)
    if ret is not None:
        return ret
    parent = k.tasks.get(task.tgid, task)
    wq = k.child_wait.setdefault(parent.tgid, WaitQueue("wait4"))
    k.sched.sleep_on(cpu, task, wq, "waitid")
    return BLOCK
