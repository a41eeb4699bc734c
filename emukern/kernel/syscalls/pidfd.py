"""pidfd_open, pidfd_send_signal, pidfd_getfd <-> kernel/pid.c and kernel/signal.c.

A pidfd (fs/pidfs.py) names a thread-group leader; signals sent through it go to the process
(as kill() would), and pidfd_getfd duplicates one of the process's descriptors into the caller
(always close-on-exec).  Both descriptors answer ESRCH once the process has exited.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel import pid as kpid
from emukern.kernel.cred import CAP_SYS_PTRACE, capable, cred_of
from emukern.kernel.fs.pidfs import PidFdFile, _exited
from emukern.kernel.signal import generate as signal_generate
from emukern.kernel.signal import base as signal_base
from emukern.kernel.signal.defs import NSIG, s32

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

PIDFD_NONBLOCK = 0o4000             # O_NONBLOCK
PIDFD_THREAD = 0o200                # O_EXCL: name a thread, not a process (6.9)
PIDFD_SIGNAL_FLAGS = 0x7            # PIDFD_SIGNAL_THREAD, _THREAD_GROUP, _PROCESS_GROUP


def sys_pidfd_open(k: "Kernel", cpu, task, pid, flags, *a):
    pid = s32(pid)
    cpu.charge(k.cost.syscall_body)
    if flags & ~(PIDFD_NONBLOCK | PIDFD_THREAD) or pid <= 0:
        return -E.EINVAL
    t = kpid.find_task_by_vpid(k, task, pid)
    if t is None or not t.alive:
        return -E.ESRCH
    if not flags & PIDFD_THREAD and not t.is_thread_leader:
        return -E.ENOENT            # a thread's TID names no process
    return task.files.install(PidFdFile(k, t, bool(flags & PIDFD_NONBLOCK)), cloexec=True)


def ptrace_may_access(caller, target) -> bool:
    """__ptrace_may_access with real credentials (PTRACE_MODE_ATTACH_REALCREDS), as
    pidfd_getfd asks: its own process always; else the caller's real uid and gid must match
    the target's real, effective and saved ids, and a target that made itself non-dumpable
    needs privilege besides (CAP_SYS_PTRACE)."""
    if caller.tgid == target.tgid:
        return True
    me, them = cred_of(caller), cred_of(target)
    privileged = capable(caller, CAP_SYS_PTRACE)
    same = (me.uid == them.uid == them.euid == them.suid and me.gid == them.gid == them.egid == them.sgid)
    if not same and not privileged:
        return False
    return target.mm is None or target.mm.dumpable == 1 or privileged


def _pidfd(task, fd: int) -> PidFdFile | None:
    f = task.files.get(s32(fd)) if task.files is not None else None
    return f if isinstance(f, PidFdFile) else None


def sys_pidfd_send_signal(k: "Kernel", cpu, task, pidfd, sig, info, flags, *a):
    signal_base._sig_init(k, task)
    cpu.charge(k.cost.syscall_body)
    if flags & ~PIDFD_SIGNAL_FLAGS:
        return -E.EINVAL
    if task.files is None or task.files.get(s32(pidfd)) is None:
        return -E.EBADF
    f = _pidfd(task, pidfd)
    if f is None:
        return -E.EBADF
    sig = s32(sig)
    if not 0 <= sig <= NSIG:
        return -E.EINVAL
    if info:
        return -E.EINVAL            # a caller-made siginfo: not accepted here (only NULL)
    tgt = signal_generate._group_target(k, f.task) if not _exited(f.task, k) else None
    if tgt is None:
        return -E.ESRCH
    return signal_generate.send_signal(k, cpu, tgt, signal_generate._kill_info(k, task, sig), True) if sig else 0


def sys_pidfd_getfd(k: "Kernel", cpu, task, pidfd, targetfd, flags, *a):
    cpu.charge(k.cost.syscall_body)
    if flags:
        return -E.EINVAL
    if task.files is None or task.files.get(s32(pidfd)) is None:
        return -E.EBADF
    f = _pidfd(task, pidfd)
    if f is None:
        return -E.EBADF
    if _exited(f.task, k) or f.task.files is None:
        return -E.ESRCH
    if not ptrace_may_access(task, f.task):
        return -E.EPERM
    other = f.task.files.get(s32(targetfd))
    if other is None:
        return -E.EBADF
    return task.files.install(other, cloexec=True)
