"""mlock / mlock2 / munlock / mlockall / munlockall <-> mm/mlock.c.

The guest runs as root and so has CAP_IPC_LOCK: as in Linux's can_do_mlock for a capable task,
RLIMIT_MEMLOCK never refuses a lock.  A lock sets VM_LOCKED (and, for MLOCK_ONFAULT or
MCL_ONFAULT, VM_LOCKONFAULT) on the range: kernel/mm/vma.py keeps them per mm, with the pages
they belong to, so /proc/PID/smaps shows 'lo' and Locked, and /proc/PID/maps splits the mapping
where the flags differ.  A lock without ONFAULT faults the range in (populate_vma_page_range),
which is what makes Rss equal Size afterwards; with ONFAULT only the pages touched later come
in.  Locks are not inherited by fork (the child's mm starts without them, as dup_mmap clears
VM_LOCKED).  The range checks are mremap.py's ``_lock_range_args``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.mm.vma import (MCL_CURRENT, MCL_FUTURE, MCL_ONFAULT, MLOCK_ONFAULT, VM_LOCKED,
                                   VM_LOCKONFAULT, _lock_ranges, _pieces, lock_future, lock_populate,
                                   lock_unlock_all)
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
    lo, hi = got
    if hi > lo:
        onfault = bool(flags & MLOCK_ONFAULT)
        _lock_ranges(task.mm, lo, hi, True, VM_LOCKED | (VM_LOCKONFAULT if onfault else 0))
        if not onfault:
            # __mm_populate: the pages come in now (its errors are not the caller's)
            for m, plo, phi in _pieces(task.mm, lo, hi):
                lock_populate(m, plo, phi)
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
    """mm/mlock.c mlockall: some of MCL_CURRENT/MCL_FUTURE, MCL_ONFAULT only with one.
    MCL_CURRENT gives every vma the new lock flags (replacing an ONFAULT lock or not) and
    faults them in unless MCL_ONFAULT; MCL_FUTURE makes them the flags of later mappings."""
    cpu.charge(k.cost.mmap_op)
    flags &= 0xFFFFFFFF
    if not flags or flags & ~(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) or flags == MCL_ONFAULT:
        return -E.EINVAL
    mm = task.mm
    lock = VM_LOCKED | (VM_LOCKONFAULT if flags & MCL_ONFAULT else 0)
    lock_future(mm, lock if flags & MCL_FUTURE else 0)
    if flags & MCL_CURRENT:
        for m in list(mm.mappings):
            _lock_ranges(mm, m.start, m.end, True, lock)
            if not flags & MCL_ONFAULT:
                lock_populate(m, m.start, m.end)
    return 0


def sys_munlockall(k: "Kernel", cpu, task, *a):
    cpu.charge(k.cost.mmap_op)
    lock_unlock_all(task.mm)
    return 0
