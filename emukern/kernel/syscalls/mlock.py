"""mlock / mlock2 / munlock / mlockall / munlockall <-> mm/mlock.c.

The guest runs as root and so has CAP_IPC_LOCK: as in Linux's can_do_mlock for a capable task,
RLIMIT_MEMLOCK never refuses a lock.  Locked ranges are kept per mm (not inherited by fork) and
matter only for msync's EBUSY, since every mapped page is resident anyway.  The range checks
are mremap.py's ``_lock_range_args``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.mm.vma import MCL_CURRENT, MCL_FUTURE, MCL_ONFAULT, MLOCK_ONFAULT, _lock_ranges
from emukern.kernel.syscalls import mremap as syscalls_mremap

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_mlock(k: "Kernel", cpu, task, start, length, *a):
    return sys_mlock2(k, cpu, task, start, length, 0)


def sys_mlock2(k: "Kernel", cpu, task, start, length, flags, *a):
    """mm/mlock.c mlock2: only MLOCK_ONFAULT is a flag; root has CAP_IPC_LOCK, so
    RLIMIT_MEMLOCK is not checked (see the module docstring)."""
    cpu.charge(k.cost.mmap_op)
    if flags & 0xFFFFFFFF & ~MLOCK_ONFAULT:
        return -E.EINVAL
    got = syscalls_mremap._lock_range_args(k, task, start, length)
    if isinstance(got, int):
        return got
    if got[1] > got[0]:
        _lock_ranges(task.mm, got[0], got[1], True)
    return 0


def sys_munlock(k: "Kernel", cpu, task, start, length, *a):
    cpu.charge(k.cost.mmap_op)
    got = syscalls_mremap._lock_range_args(k, task, start, length)
    if isinstance(got, int):
        return got
    if got[1] > got[0]:
        _lock_ranges(task.mm, got[0], got[1], False)
    return 0


def sys_mlockall(k: "Kernel", cpu, task, flags, *a):
    """mm/mlock.c mlockall: some of MCL_CURRENT/MCL_FUTURE, MCL_ONFAULT only with one."""
    cpu.charge(k.cost.mmap_op)
    flags &= 0xFFFFFFFF
    if not flags or flags & ~(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) or flags == MCL_ONFAULT:
        return -E.EINVAL
    mm = task.mm
    if flags & MCL_CURRENT:
        for m in mm.mappings:
            _lock_ranges(mm, m.start, m.end, True)
    mm.__dict__["_mlock_future"] = bool(flags & MCL_FUTURE)
    return 0


def sys_munlockall(k: "Kernel", cpu, task, *a):
    cpu.charge(k.cost.mmap_op)
    task.mm.__dict__["_mlocked"] = []
    task.mm.__dict__["_mlock_future"] = False
    return 0
