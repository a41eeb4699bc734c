"""dup / dup3 / close_range <-> fs/file.c.

``_dup`` installs a second descriptor for an open file (also used by fcntl's F_DUPFD);
``sys_close_range`` closes or, with CLOSE_RANGE_CLOEXEC, marks a range, and with
CLOSE_RANGE_UNSHARE first gives the task a descriptor table of its own.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.kernel.syscalls import open as syscalls_open
from emukern.kernel.fs.uapi import O_CLOEXEC
from emukern.kernel.cred import CLOSE_RANGE_CLOEXEC, CLOSE_RANGE_UNSHARE, _u32

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def _dup(k: "Kernel", task, oldfd: int, newfd: int | None, lowest: int = 0, cpu: Any = None) -> int:
    f = task.files.get(oldfd if oldfd < 1 << 63 else oldfd - (1 << 64))
    if f is None:
        return -E.EBADF
    if newfd is None:
        return task.files.install(f, lowest)
    if newfd >= task.files.nofile:
        return -E.EBADF                 # do_dup2 past RLIMIT_NOFILE
    if not task.files.charge_slot():
        return -E.ENOMEM                # expand_files, before do_dup2 closes what newfd held
    if newfd in task.files.fds:
        # do_dup2 closes what newfd held: its waiters (a pipe's readers, a lock's sleepers) are
        # woken as close(2) wakes them
        _ret, wqs = task.files.close(newfd)
        if cpu is not None:
            for wq in wqs:
                k.sched.wake_queue(wq, cpu.now)
    task.files.fds[newfd] = f
    f.refs += 1
    return newfd


def sys_dup(k: "Kernel", cpu, task, oldfd, *a):
    return _dup(k, task, oldfd, None)


def sys_dup3(k: "Kernel", cpu, task, oldfd, newfd, flags, *a):
    if oldfd == newfd or flags & ~0x80000:
        return -E.EINVAL
    fd = _dup(k, task, oldfd, newfd, cpu=cpu)
    if fd >= 0:
        if flags & O_CLOEXEC:
            task.files.cloexec.add(fd)
        else:
            task.files.cloexec.discard(fd)
    return fd


# ---- close_range (fs/file.c) -----------------------------------------------------------------------
def sys_close_range(k: "Kernel", cpu, task, first, last, flags, *a):
    """close_range: EINVAL for unknown flags or first > last; CLOSE_RANGE_UNSHARE first gives
    the task a table of its own (unshare_fd) when threads or CLONE_FILES children share it;
    CLOSE_RANGE_CLOEXEC marks instead of closing."""
    first, last = _u32(first), _u32(last)
    if flags & ~(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC) or first > last:
        return -E.EINVAL
    if flags & CLOSE_RANGE_UNSHARE and any(t.files is task.files for t in k.tasks.values()
                                           if t is not task and t.alive):
        task.files = task.files.dup_table()
    fds = sorted(fd for fd in task.files.fds if first <= fd <= last)
    cpu.charge(k.cost.syscall_body)
    if flags & CLOSE_RANGE_CLOEXEC:
        task.files.cloexec.update(fds)
        return 0
    for fd in fds:
        syscalls_open.sys_close(k, cpu, task, fd)
    return 0
