"""pidfds <-> fs/pidfs.c: a file that names a process.

A pidfd polls readable (EPOLLIN) once the process it names has exited — its last thread gone,
whether or not its parent reaped it — which is how a non-parent waits for a process.  The exit
path announces it with :func:`pidfs_exit`.  Its fdinfo shows ``Pid:`` (-1 once the process is
gone) and ``NSpid:`` (its numbers from the reader's pid namespace down).
"""
from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from emukern.kernel import pid as kpid
from emukern.kernel.files import File, WaitQueue

if TYPE_CHECKING:
    from emukern.kernel.task import Task

EPOLLIN, EPOLLRDNORM = 0x1, 0x40

# the pollers of each process, by its thread-group leader (gone with the task)
_WAITERS: "weakref.WeakKeyDictionary[Task, WaitQueue]" = weakref.WeakKeyDictionary()


def _exited(leader: "Task", k: Any) -> bool:
    return not any(t.alive for t in k.tasks.values() if t.tgid == leader.tgid)


class PidFdFile(File):
    kind = "pidfd"
    stat_mode = 0o100600             # an anonymous inode (pidfs: a regular-file mode)

    def __init__(self, k: Any, leader: "Task", nonblock: bool) -> None:
        super().__init__()
        self.k = k
        self.task = leader
        self.nonblock = nonblock
        self.flags = 2 | (0o4000 if nonblock else 0)          # O_RDWR, as pidfd_open makes it

    def setfl(self, flags: int) -> int:
        """fcntl(F_SETFL): O_NONBLOCK, which waitid(P_PIDFD) honours (EAGAIN instead of sleeping)."""
        self.nonblock = bool(flags & 0o4000)
        return 0

    def poll(self) -> int | None:
        return EPOLLIN | EPOLLRDNORM if _exited(self.task, self.k) else 0

    def poll_queues(self) -> list[WaitQueue]:
        wq = _WAITERS.get(self.task)
        if wq is None:
            wq = _WAITERS[self.task] = WaitQueue("pidfd")
        return [wq]

    def show_fdinfo(self) -> str:
        """pidfd_show_fdinfo: the process's number in the pid namespace of the /proc the
        fdinfo file was read through (0 when it cannot see it, -1 once it is gone), then its
        numbers from there down to the namespace it was born in."""
        if _exited(self.task, self.k):
            return "Pid:\t-1\nNSpid:\t-1\n"
        view = kpid.proc_pid_ns(self.k, getattr(self.k.procfs, "current", None))
        if self.task.pid_ns is None and view is None:
            return f"Pid:\t{self.task.tgid}\nNSpid:\t{self.task.tgid}\n"
        ns = view if view is not None else self.k.init_pid_ns
        nrs = kpid.upids_of(self.k, self.task, ns)
        return f"Pid:\t{nrs[0] if nrs else 0}\nNSpid:\t" + "\t".join(map(str, nrs or [0])) + "\n"


def pidfs_exit(k: Any, now: int, leader: "Task") -> None:
    """The process of ``leader`` has exited: wake whoever polls a pidfd of it."""
    wq = _WAITERS.get(leader)
    if wq is not None:
        k.sched.wake_queue(wq, now)
