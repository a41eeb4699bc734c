"""mlock / mlock2 / munlock / mlockall / munlockall <-> mm/mlock.c.

A task with CAP_IPC_LOCK (a root guest, until it drops it) is never refused by RLIMIT_MEMLOCK;
one without it is held to the limit as do_mlock / mlockall count it (can_do_mlock: EPERM with a
zero limit; ENOMEM when the locked pages, less those of the range already locked, would pass it).  A lock sets VM_LOCKED (and, for MLOCK_ONFAULT or
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
from emukern.kernel.cred import CAP_IPC_LOCK, capable
from emukern.kernel.resource import RLIMIT_MEMLOCK, rlimit
from emukern.kernel.mm.vma import (MCL_CURRENT, MCL_FUTURE, MCL_ONFAULT, MLOCK_ONFAULT, VM_LOCKED,
                                   VM_LOCKONFAULT, _lock_ranges, _locked, _pieces, lock_future,
                                   lock_populate, lock_unlock_all, locked_bytes)
from emukern.kernel.syscalls import mremap as syscalls_mremap

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


PAGE_SHIFT = 12


def _memlock_limit(k: "Kernel", task) -> int | None:
    """RLIMIT_MEMLOCK in pages for a task without CAP_IPC_LOCK, None when it has it."""
    return None if capable(task, CAP_IPC_LOCK) else rlimit(k, task, RLIMIT_MEMLOCK) >> PAGE_SHIFT


def _already_locked(mm, lo: int, hi: int) -> int:
    """count_mm_mlocked_page_nr: pages of [lo, hi) that are locked already (a re-lock of them
    is not new locked memory)."""
    n = 0
    for a, b in _locked(mm):
        for _m, plo, phi in _pieces(mm, max(a, lo), min(b, hi)) if max(a, lo) < min(b, hi) else ():
            n += (phi - plo) >> PAGE_SHIFT
    return n


def sys_mlock(k: "Kernel", cpu, task, start, length, *a):
    return sys_mlock2(k, cpu, task, start, length, 0)


def sys_mlock2(k: "Kernel", cpu, task, start, length, flags, *a):
    """mm/mlock.c mlock2: only MLOCK_ONFAULT is a flag; RLIMIT_MEMLOCK as the module docstring
    says."""
    cpu.charge(k.cost.mmap_op)
    if flags & 0xFFFFFFFF & ~MLOCK_ONFAULT:
        return -E.EINVAL
    got = syscalls_mremap._lock_range_args(k, task, start, length)
    if isinstance(got, int):
        return got
    lo, hi = got
    limit = _memlock_limit(k, task)
    if limit == 0:
        return -E.EPERM                         # can_do_mlock
    if limit is not None:
        locked = ((hi - lo) >> PAGE_SHIFT) + (locked_bytes(task.mm) >> PAGE_SHIFT)
        if locked > limit:
            locked -= _already_locked(task.mm, lo, hi)
        if locked > limit:
            return -E.ENOMEM
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
    limit = _memlock_limit(k, task)
    if limit == 0:
        return -E.EPERM                         # can_do_mlock
    if limit is not None and flags & MCL_CURRENT and \
            sum(m.end - m.start for m in mm.mappings) >> PAGE_SHIFT > limit:
        return -E.ENOMEM                        # total_vm above the limit
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
