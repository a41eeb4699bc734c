"""POSIX record locks and open-file-description locks <-> fs/locks.c.

What Linux does, and so what this does:

- A lock covers a byte range [start, end] of an *inode* (end ``OFFSET_MAX``: to the end of the
  file, however it grows), so every open of the same file sees the same locks.  Here an inode is
  the key ``fs/meta.py`` uses for its overlay and flock table (the host file's (st_dev, st_ino)),
  and its locks live in one :class:`LockContext` (``struct file_lock_context``).
- A POSIX lock (F_SETLK/F_SETLKW) is owned by the descriptor *table* (``current->files``): the
  threads of a process share their locks, fork does not hand them on, and any close of a
  descriptor for the file by the owner drops all of the owner's locks on that inode
  (``locks_remove_posix``), as does exit and exec's close-on-exec (both are closes).
- An OFD lock (F_OFD_SETLK/...) is owned by the open file description: dup and fork share it, and
  it goes at the description's last close.  Owners of the two kinds are never the same, so an OFD
  lock and a POSIX lock of the same process conflict like any two owners' locks.
- One owner's locks never conflict with each other: a new lock replaces what it overlaps, and
  locks of the same type that overlap or touch merge into one (``posix_lock_inode``).
- A conflicting F_SETLK is -EAGAIN; F_SETLKW sleeps on the context's wait queue and tries again
  when woken, -EDEADLK when waiting would close a cycle of POSIX owners each waiting for the next
  (``posix_locks_deadlock``); a signal ends the sleep with -ERESTARTSYS (the generic path of a
  blocked syscall).
- flock locks (``fs/meta.py``) are a separate table: they never conflict with these.

Emukern differs in one way that no program can see: a lock that goes away wakes every waiter of
its inode (they retry), where Linux wakes only the waiters blocked on that lock.

The close hook (:func:`locks_remove_on_close`) is registered on ``FdTable`` when this module is
imported; it finds its state from the file and the table alone (the table lists the contexts in
which it holds locks, the file its OFD contexts), so it needs no kernel reference.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.kernel.files import FdTable, File, PipeEnd, WaitQueue
from emukern.kernel.fs.file import HostFile, VfsFile

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

F_RDLCK, F_WRLCK, F_UNLCK = 0, 1, 2
SEEK_SET, SEEK_CUR, SEEK_END = 0, 1, 2
OFFSET_MAX = (1 << 63) - 1
EDEADLK = 35
MAX_DEADLK_ITERATIONS = 10       # how far the wait-for chain is followed (as Linux)


class FileLock:
    """One held lock (``struct file_lock``): [start, end] of ``type``, held by ``owner`` (an
    FdTable for a POSIX lock, a File for an OFD lock); ``pid`` is what F_GETLK reports."""

    __slots__ = ("start", "end", "type", "owner", "pid", "ofd")

    def __init__(self, start: int, end: int, type_: int, owner: Any, pid: int, ofd: bool) -> None:
        self.start, self.end, self.type = start, end, type_
        self.owner, self.pid, self.ofd = owner, pid, ofd

    def __repr__(self) -> str:
        return f"FileLock({self.start}-{self.end} {'RWU'[self.type]} {'ofd' if self.ofd else 'posix'})"


class LockContext:
    """The locks of one inode (``struct file_lock_context``) and the queue its waiters sleep on."""

    def __init__(self, key: tuple) -> None:
        self.key = key
        self.locks: list[FileLock] = []
        self.wq = WaitQueue("posix_lock")


# ---- keys and contexts ------------------------------------------------------------------------
def lock_key(f: File) -> tuple | None:
    """The inode ``f`` is open on, as the key of its lock context (cached on the file: the host
    descriptor is gone after the last close, and the key must still be known then)."""
    key = getattr(f, "_lock_key", None)
    if key is not None:
        return key
    if isinstance(f, HostFile) and f.fd >= 0:
        try:
            s = os.fstat(f.fd)
        except OSError:
            return None
        key = ("host", s.st_dev, s.st_ino)
    elif isinstance(f, VfsFile):
        node = f.node
        key = ("syn", node.dev, node.path)
    elif isinstance(f, PipeEnd):
        key = ("pipe", id(f.pipe))
    else:
        key = ("file", id(f))
    f._lock_key = key
    return key


def _contexts(k: "Kernel") -> dict:
    table = getattr(k, "_posix_lock_table", None)
    if table is None:
        table = k._posix_lock_table = {}
    return table


def _context(k: "Kernel", key: tuple) -> LockContext:
    table = _contexts(k)
    ctx = table.get(key)
    if ctx is None:
        ctx = table[key] = LockContext(key)
    return ctx


# ---- conflicts --------------------------------------------------------------------------------
def _conflicts(held: FileLock, owner: Any, start: int, end: int, type_: int) -> bool:
    """posix_locks_conflict: another owner's lock that overlaps, where either side writes."""
    return (held.owner is not owner and held.start <= end and start <= held.end
            and (held.type == F_WRLCK or type_ == F_WRLCK))


def _first_conflict(ctx: LockContext, owner: Any, start: int, end: int, type_: int) -> FileLock | None:
    if type_ == F_UNLCK:
        # F_OFD_GETLK with F_UNLCK asks for the caller's own lock over the range
        # (posix_test_locks_conflict)
        return next((h for h in ctx.locks if h.owner is owner and h.start <= end and start <= h.end), None)
    for held in ctx.locks:
        if _conflicts(held, owner, start, end, type_):
            return held
    return None


def posix_test_lock(k: "Kernel", f: File, owner: Any, start: int, end: int, type_: int) -> FileLock | None:
    """F_GETLK: the first lock that would block this request, or None."""
    key = lock_key(f)
    ctx = _contexts(k).get(key) if key is not None else None
    return _first_conflict(ctx, owner, start, end, type_) if ctx is not None else None


def _what_owner_is_waiting_for(k: "Kernel", owner: Any) -> FileLock | None:
    """The lock a task of POSIX owner ``owner`` sleeps in F_SETLKW behind, if any (Linux keeps
    its blocked_hash; here the sleeping task remembers its request)."""
    for t in k.tasks.values():
        wait = getattr(t, "_posix_lock_wait", None)
        if wait is None or t.files is not owner or not t.alive:
            continue
        ctx, start, end, type_ = wait
        if t not in ctx.wq.waiters:
            continue                          # no longer asleep there (woken, or a signal)
        blocker = _first_conflict(ctx, owner, start, end, type_)
        if blocker is not None:
            return blocker
    return None


def posix_locks_deadlock(k: "Kernel", owner: Any, blocker: FileLock) -> bool:
    """Would ``owner`` waiting for ``blocker`` close a cycle?  Follow the owners each waits for;
    only POSIX owners take part (an OFD lock is nobody's process)."""
    for _ in range(MAX_DEADLK_ITERATIONS + 1):
        if blocker.ofd:
            return False
        nxt = _what_owner_is_waiting_for(k, blocker.owner)
        if nxt is None:
            return False
        if nxt.owner is owner:
            return True
        blocker = nxt
    return False


# ---- setting --------------------------------------------------------------------------------
def _apply(ctx: LockContext, owner: Any, start: int, end: int, type_: int, pid: int, ofd: bool) -> bool:
    """Replace ``owner``'s locks over [start, end] with ``type_`` (F_UNLCK: none), merging with
    its touching or overlapping locks of the same type and splitting those of another type.
    True when some held range was given up or weakened (waiters may now succeed)."""
    mine = [l for l in ctx.locks if l.owner is owner]
    others = [l for l in ctx.locks if l.owner is not owner]
    if type_ != F_UNLCK:
        # widen over the owner's same-type locks that overlap or touch (sorted by start, one
        # pass sees every lock the widening reaches)
        for l in mine:
            if l.type == type_ and l.start <= end + 1 and start <= l.end + 1:
                start, end = min(start, l.start), max(end, l.end)
    kept: list[FileLock] = []
    released = False
    for l in mine:
        if l.end < start or l.start > end:
            kept.append(l)
            continue
        # overlapped: what lies outside the new range stays, the rest is replaced
        if l.start < start:
            kept.append(FileLock(l.start, start - 1, l.type, owner, l.pid, ofd))
        if l.end > end:
            kept.append(FileLock(end + 1, l.end, l.type, owner, l.pid, ofd))
        if type_ == F_UNLCK or (l.type == F_WRLCK and type_ == F_RDLCK):
            released = True               # given up or downgraded (an upgrade frees nothing)
    if type_ != F_UNLCK:
        kept.append(FileLock(start, end, type_, owner, pid, ofd))
    kept.sort(key=lambda l: l.start)
    # the owner's locks stay where its group was in the list (F_GETLK reports the first
    # conflict in list order); an owner new to the inode goes to the end
    at = next((i for i, l in enumerate(ctx.locks) if l.owner is owner), len(ctx.locks))
    at -= sum(1 for l in ctx.locks[:at] if l.owner is owner)
    ctx.locks = others[:at] + kept + others[at:]
    return released


def posix_lock_file(k: "Kernel", cpu, task, f: File, owner: Any, ofd: bool, start: int, end: int,
                    type_: int, wait: bool) -> int | None:
    """F_SETLK/F_SETLKW (and the OFD forms): 0 when set, -EAGAIN or -EDEADLK, or None when the
    caller must sleep on the context's queue (the request is remembered for the deadlock walk)."""
    key = lock_key(f)
    if key is None:
        return -E.EBADF
    ctx = _context(k, key)
    task._posix_lock_wait = None
    if type_ != F_UNLCK:
        blocker = _first_conflict(ctx, owner, start, end, type_)
        if blocker is not None:
            if not wait:
                return -E.EAGAIN
            if not ofd and posix_locks_deadlock(k, owner, blocker):
                return -EDEADLK
            if not ofd:                   # only POSIX owners wait in the deadlock walk
                task._posix_lock_wait = (ctx, start, end, type_)
            return None
    released = _apply(ctx, owner, start, end, type_, task.tgid, ofd)
    _note_owner(ctx, owner, f, ofd)
    if released:
        k.sched.wake_queue(ctx.wq, cpu.now)
    return 0


def lock_wait_queue(k: "Kernel", f: File) -> WaitQueue:
    """The queue an F_SETLKW on ``f`` sleeps on (its inode's)."""
    return _context(k, lock_key(f)).wq


def _note_owner(ctx: LockContext, owner: Any, f: File, ofd: bool) -> None:
    """Remember where an owner holds locks, for the close hook."""
    holder = f if ofd else owner
    ctxs = holder.__dict__.get("_lock_ctxs")
    if ctxs is None:
        ctxs = holder._lock_ctxs = {}
    ctxs[ctx.key] = ctx


def _remove_owner(ctx: LockContext, owner: Any) -> list[WaitQueue]:
    before = len(ctx.locks)
    ctx.locks = [l for l in ctx.locks if l.owner is not owner]
    return [ctx.wq] if len(ctx.locks) != before else []


# ---- release on close -----------------------------------------------------------------------
def locks_remove_on_close(f: File, table: FdTable) -> list[WaitQueue]:
    """``filp_close`` -> ``locks_remove_posix``: a close of any descriptor for an inode by a table
    drops that table's POSIX locks on the inode; the last close of a description
    (``locks_remove_file``) drops its OFD locks.  Returns the queues to wake."""
    wqs: list[WaitQueue] = []
    mine = table.__dict__.get("_lock_ctxs")
    ofds = f.__dict__.get("_lock_ctxs") if f.refs <= 0 else None
    if not mine and not ofds:
        return wqs
    key = lock_key(f)
    if mine and key in mine:
        wqs += _remove_owner(mine.pop(key), table)
    if ofds:
        for ctx in ofds.values():
            wqs += _remove_owner(ctx, f)
        ofds.clear()
    return wqs


if locks_remove_on_close not in FdTable.close_hooks:
    FdTable.close_hooks.append(locks_remove_on_close)
