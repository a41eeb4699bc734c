"""The futex hash and its waiters, PI ownership hand-over, and the robust list walked at exit —
mirrors kernel/futex/core.c, waitwake.c, requeue.c and pi.c (the parts a process can observe).

It sits in the signal package beside ``exit.py`` because the exit path needs it
(``exit_robust_list`` runs from ``exit_mm_release``, before CLONE_CHILD_CLEARTID's wake); the
syscall side (``sys_futex``, ``sys_futex_waitv``, ``set_robust_list``) is
``kernel/syscalls/futex.py``.

A waiter is a task on a :class:`FutexQueue` (the hash bucket of one (mm, address) key) with a
:class:`FutexWaiter` record in ``task.futex``: its bitset, and whether it waits plainly, waits to
be requeued onto a PI futex (FUTEX_WAIT_REQUEUE_PI) or waits for a PI futex's ownership.  PI
futexes keep Linux's user-visible contract — the word holds the owner's TID, FUTEX_WAITERS while
someone sleeps, and an unlock hands the lock straight to the first waiter — without the
rt-mutex's priority boosting (emukern's scheduler has no priority chain to boost along).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from emukern.errors import MemoryFault
from emukern.kernel.fs.file import file_view
from emukern.kernel import errno as E
from emukern.kernel.files import WaitQueue
from emukern.kernel.task import Task, TaskState
from emukern.machine.memory import is_shared

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

FUTEX_WAITERS = 0x80000000
FUTEX_OWNER_DIED = 0x40000000
FUTEX_TID_MASK = 0x3FFFFFFF
FUTEX_BITSET_MATCH_ANY = 0xFFFFFFFF

ROBUST_LIST_LIMIT = 2048            # Linux stops walking a (possibly circular) list here
ROBUST_LIST_HEAD_SIZE = 24          # struct robust_list_head on a 64-bit ABI


@dataclass
class FutexWaiter:
    """What one sleeping task waits for (Linux's ``struct futex_q``)."""
    key: tuple[int, int]
    bitset: int = FUTEX_BITSET_MATCH_ANY
    kind: str = "wait"              # wait | requeue_pi (waits on uaddr for uaddr2) | pi (waits for the lock)
    target: tuple[int, int] | None = None    # requeue_pi: the PI futex it may be moved to
    index: int = 0                  # futex_waitv: its position in the caller's vector
    woken: bool = False             # a wake (not a timeout or a signal) picked this entry


class FutexQueue(WaitQueue):
    """One key's waiters in FIFO order (a hash bucket's plist without priorities)."""

    def __init__(self, key: tuple[int, int]) -> None:
        super().__init__("futex")
        self.key = key
        self.entries: dict[Task, FutexWaiter] = {}


def futex_key(task: Task, uaddr: int, private: bool = False) -> tuple[int, int]:
    """get_futex_key: a futex in a MAP_SHARED mapping is named by its backing memory and offset,
    so processes sharing it meet on one key; any other (or a FUTEX_PRIVATE_FLAG one) by the
    address space and the address."""
    if not private:
        m = task.mm.find(uaddr)
        if m is not None and is_shared(m):
            view = file_view(m.buf)
            if view is not None:
                # a root file's page: the inode and file offset (mappings made by separate
                # mmap calls are separate host buffers of the same file); negative, apart from
                # every id()
                return (-1 - (view.key[1] << 64 | view.key[0]),
                        view.file_off + m.offset + (uaddr - m.start))
            return (id(m.buf), m.offset + (uaddr - m.start))
    return (id(task.mm), uaddr)


def queue_of(k: "Kernel", key: tuple[int, int], create: bool = True) -> FutexQueue | None:
    q = k.futex_queues.get(key)
    if isinstance(q, FutexQueue):
        return q
    if not create and q is None:
        return None
    nq = FutexQueue(key)
    if q is not None:                       # a plain queue (a CLONE_CHILD_CLEARTID sleeper's)
        nq.waiters.extend(q.waiters)
    k.futex_queues[key] = nq
    return nq


def enqueue(k: "Kernel", task: Task, w: FutexWaiter) -> FutexQueue:
    """futex_queue: append ``task`` to its key's bucket with the record ``w``."""
    q = queue_of(k, w.key)
    assert q is not None
    q.add(task)
    q.entries[task] = w
    return q


def unqueue_all(k: "Kernel", task: Task) -> list[FutexWaiter]:
    """futex_unqueue for every bucket ``task`` sleeps on (a timeout, a signal, futex_waitv's
    other keys); returns the records, each with ``woken`` telling whether a wake picked it."""
    out = []
    recs = task.futex if isinstance(task.futex, list) else ([task.futex] if task.futex else [])
    for w in recs:
        q = queue_of(k, w.key, create=False)
        if q is not None:
            q.remove(task)
            q.entries.pop(task, None)
        out.append(w)
    task.futex = None
    for wq in task.waitqueues:
        wq.remove(task)
    task.waitqueues = []
    return out


def wake_waiter(k: "Kernel", now: int, q: FutexQueue, t: Task) -> None:
    q.remove(t)
    w = q.entries.pop(t, None)
    if w is not None:
        w.woken = True
    k.sched.wake_up(t, now, 0)


def futex_wake(k: "Kernel", now: int, key: tuple[int, int], nr: int,
               bitset: int = FUTEX_BITSET_MATCH_ANY) -> int:
    """Wake up to ``nr`` waiters of ``key`` whose bitset shares a bit with ``bitset``; -EINVAL when
    the first one met is a PI waiter (a PI futex is released by FUTEX_UNLOCK_PI, never woken)."""
    q = queue_of(k, key, create=False)
    if q is None:
        return 0
    n = 0
    for t in list(q.waiters):
        if n >= nr:
            break
        if t.state != TaskState.BLOCKED:
            q.remove(t)
            q.entries.pop(t, None)
            continue
        w = q.entries.get(t)
        if w is not None and w.kind != "wait":
            return -E.EINVAL
        if w is not None and not w.bitset & bitset:
            continue
        wake_waiter(k, now, q, t)
        n += 1
    return n


def requeue(k: "Kernel", task_from: FutexQueue, t: Task, to_key: tuple[int, int], kind: str = "wait") -> None:
    """requeue_futex: move a sleeper from one bucket to another without waking it."""
    w = task_from.entries.pop(t, None) or FutexWaiter(task_from.key)
    task_from.remove(t)
    w.key, w.kind = to_key, kind
    to = enqueue(k, t, w)
    t.futex = w
    t.waitqueues = [to]


def pi_handover(k: "Kernel", now: int, mm: Any, uaddr: int, key: tuple[int, int], extra: int = 0) -> bool:
    """wake_futex_pi: give the PI futex at ``uaddr`` to its first waiter (the word becomes its TID,
    with FUTEX_WAITERS while others still sleep, plus ``extra`` bits such as FUTEX_OWNER_DIED).
    False when nobody waits."""
    q = queue_of(k, key, create=False)
    if q is None:
        return False
    for t in list(q.waiters):
        if t.state != TaskState.BLOCKED:
            q.remove(t)
            q.entries.pop(t, None)
            continue
        rest = [o for o in q.waiters if o is not t and o.state == TaskState.BLOCKED]
        mm.write_u32(uaddr, (t.tid & FUTEX_TID_MASK) | extra | (FUTEX_WAITERS if rest else 0))
        wake_waiter(k, now, q, t)
        return True
    return False


def task_by_tid(k: "Kernel", tid: int) -> Task | None:
    t = k.tasks.get(tid)
    return t if t is not None and t.alive else None


# ---- the robust list at exit ------------------------------------------------------------------
def handle_futex_death(k: "Kernel", now: int, task: Task, uaddr: int, pi: bool) -> None:
    """The futex at ``uaddr`` is held by the exiting ``task``: mark it FUTEX_OWNER_DIED (keeping
    FUTEX_WAITERS) so the next locker learns it (EOWNERDEAD from pthread_mutex_lock), and wake
    one waiter — for a PI futex, hand it the lock with the bit set."""
    if uaddr % 4:
        return
    mm = task.mm
    try:
        uval = mm.read_u32(uaddr)
        if uval & FUTEX_TID_MASK != task.tid & FUTEX_TID_MASK:
            return
        key = futex_key(task, uaddr)
        if pi and pi_handover(k, now, mm, uaddr, key, FUTEX_OWNER_DIED):
            return
        mm.write_u32(uaddr, (uval & FUTEX_WAITERS) | FUTEX_OWNER_DIED)
        if not pi and uval & FUTEX_WAITERS:
            futex_wake(k, now, key, 1)
    except MemoryFault:               # a bad pointer in the list: stop quietly, as Linux does
        return


def exit_robust_list(k: "Kernel", now: int, task: Task) -> None:
    """Walk the exiting thread's robust list (set_robust_list's head): every lock it still holds
    is marked owner-died.  The low bit of an entry pointer says the lock is a PI futex; the entry
    ``list_op_pending`` names is handled last (a lock being taken or released when it died)."""
    head = task.robust_list
    task.robust_list = 0
    if not head:
        return
    mm = task.mm
    try:
        entry = mm.read_u64(head)
        offset = int.from_bytes(mm.read(head + 8, 8), "little", signed=True)
        pending = mm.read_u64(head + 16)
    except MemoryFault:
        return
    seen = 0
    while entry & ~1 != head and seen < ROBUST_LIST_LIMIT:
        try:
            nxt = mm.read_u64(entry & ~1)
        except MemoryFault:
            return
        if entry & ~1 != pending & ~1:
            handle_futex_death(k, now, task, (entry & ~1) + offset, bool(entry & 1))
        entry = nxt
        seen += 1
    if pending:
        handle_futex_death(k, now, task, (pending & ~1) + offset, bool(pending & 1))
