"""kcmp <-> kernel/kcmp.c: do two processes share a kernel object?

Checkpoint/restore tools ask whether two tasks hold the same open file, fd table, mm, fs_struct,
signal handlers, I/O context or SysV semaphore undo list, without seeing kernel pointers.  The
answer is an order, not an address: 0 the same object, 1 or 2 a consistent "less"/"greater" for
different objects (Linux orders obfuscated pointers; here each object gets a number the first
time it is compared, which orders them the same way every run), 3 when the order is unknown.
"""
from __future__ import annotations

import itertools
import weakref
from typing import TYPE_CHECKING, Any

from emukern.errors import MemoryFault
from emukern.kernel import errno as E
from emukern.kernel.fs.poll import EventPollFile
from emukern.kernel.signal.defs import s32
from emukern.kernel.syscalls.pidfd import ptrace_may_access

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

KCMP_FILE, KCMP_VM, KCMP_FILES, KCMP_FS, KCMP_SIGHAND, KCMP_IO, KCMP_SYSVSEM, KCMP_EPOLL_TFD = range(8)
KCMP_TYPES = 8

# a stable rank for each compared object (weakly held: an object gone is never asked about again)
_RANK: "weakref.WeakKeyDictionary[Any, int]" = weakref.WeakKeyDictionary()
_NEXT = itertools.count(1)


def _rank(obj: Any) -> int:
    try:
        r = _RANK.get(obj)
        if r is None:
            r = _RANK[obj] = next(_NEXT)
        return r
    except TypeError:               # an object without weak references: order by identity
        return id(obj)


def kcmp_ptr(a: Any, b: Any) -> int:
    """0 for the same object, else 1 or 2 in a fixed order (both absent: the same, as NULLs)."""
    if a is b:
        return 0
    if a is None or b is None:
        return 1 if a is None else 2
    return 1 if _rank(a) < _rank(b) else 2


def _file(task: Any, fd: int) -> Any:
    return task.files.get(s32(fd)) if task.files is not None else None


def _epoll_target(caller: Any, owner: Any, slot: int) -> Any:
    """The file that ``owner``'s epoll instance ``efd`` watches as its ``toff``-th registration
    of ``tfd`` (struct kcmp_epoll_slot, copied from the caller's memory): None when none."""
    raw = caller.mm.read(slot, 12)
    efd, tfd, toff = (int.from_bytes(raw[i:i + 4], "little") for i in (0, 4, 8))
    ep = _file(owner, efd)
    if not isinstance(ep, EventPollFile):
        return None
    hits = [it.file for it in ep.live_items() if it.fd == s32(tfd)]
    return hits[toff] if toff < len(hits) else None


def sys_kcmp(k: "Kernel", cpu, task, pid1, pid2, type_, idx1, idx2, *a):
    cpu.charge(k.cost.syscall_body)
    t1, t2 = k.tasks.get(s32(pid1)), k.tasks.get(s32(pid2))
    if t1 is None or t2 is None or not t1.alive or not t2.alive:
        return -E.ESRCH
    if not ptrace_may_access(task, t1) or not ptrace_may_access(task, t2):
        return -E.EPERM             # the caller may not look into one of them (PTRACE_MODE_READ)
    if type_ == KCMP_FILE:
        f1, f2 = _file(t1, idx1), _file(t2, idx2)
        if f1 is None or f2 is None:
            return -E.EBADF
        return kcmp_ptr(f1, f2)
    if type_ == KCMP_EPOLL_TFD:
        f1 = _file(t1, idx1)
        if f1 is None:
            return -E.EBADF
        try:
            f2 = _epoll_target(task, t2, idx2)
        except MemoryFault:
            return -E.EFAULT
        if f2 is None:
            return -E.ENOENT
        return kcmp_ptr(f1, f2)
    shared = {KCMP_VM: lambda t: t.mm, KCMP_FILES: lambda t: t.files, KCMP_FS: lambda t: t.fs,
              KCMP_SIGHAND: lambda t: t.sighand,
              KCMP_IO: lambda t: None,           # no I/O contexts: every task's is absent, alike
              # SEM_UNDO lists are kept per process, never shared by CLONE_SYSVSEM: no shared object
              KCMP_SYSVSEM: lambda t: None}.get(type_)
    if shared is None:
        return -E.EINVAL
    return kcmp_ptr(shared(t1), shared(t2))
