"""process_mrelease <-> mm/oom_kill.c (Linux 5.15+).

A process manager that has just sent SIGKILL may ask, through a pidfd, for the victim's memory
now rather than when its last thread gets round to exiting.  Only a process that is already on
its way out qualifies (task_will_free_mem: a fatal signal taken for the whole group, and every
other user of its mm dying too): a live one is EINVAL, one whose mm is already gone is ESRCH.
Flags are reserved (EINVAL).

What the reaper frees (the private anonymous pages) emukern frees when the victim's exit drops
the mm, a few instructions later on the one clock; so the call marks the mm reaped
(MMF_OOM_SKIP: a second call succeeds at once, as Linux's finds the work done) and returns.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.fs.pidfs import PidFdFile
from emukern.kernel.signal.defs import SIGKILL, s32

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

_KILL = 1 << (SIGKILL - 1)


def _dying(t) -> bool:
    """The task will not run user code again: SIGKILL is pending for it or its group."""
    sig = t.sigstate
    if sig is not None and sig.pending.signal & _KILL:
        return True
    group = getattr(t, "signal", None)
    return group is not None and (group.group_exit or bool(group.shared_pending.signal & _KILL))


def task_will_free_mem(k: "Kernel", task, mm) -> bool:
    """Every live task that uses mm is dying (threads of the group and CLONE_VM processes)."""
    users = [t for t in k.tasks.values() if t.alive and t.mm is mm]
    return bool(users) and all(_dying(t) for t in users)


def sys_process_mrelease(k: "Kernel", cpu, task, pidfd, flags, *a):
    cpu.charge(k.cost.syscall_body)
    if flags & 0xFFFFFFFF:
        return -E.EINVAL
    f = task.files.get(s32(pidfd)) if task.files is not None else None
    if not isinstance(f, PidFdFile):
        return -E.EBADF             # no descriptor, or one that names no process
    # find_lock_task_mm: a thread of the group that still holds the mm
    holder = next((t for t in k.tasks.values() if t.tgid == f.task.tgid and t.alive
                   and t.mm is not None and not t.mm.released), None)
    if holder is None:
        return -E.ESRCH
    mm = holder.mm
    if getattr(mm, "oom_skip", False):
        return 0                    # already reaped
    if not task_will_free_mem(k, holder, mm):
        return -E.EINVAL            # not exiting: nothing to hurry
    mm.oom_skip = True
    return 0
