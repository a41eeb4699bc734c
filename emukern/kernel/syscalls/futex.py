"""futex, futex_waitv, set_robust_list / get_robust_list <-> kernel/futex/syscalls.c.

``sys_futex`` decodes the operation and its timeout as Linux does and runs it on the futex hash
of ``signal/futex_core.py``: WAIT/WAKE and their _BITSET forms (the bitset narrows wake-ups),
REQUEUE, CMP_REQUEUE, WAKE_OP, the PI operations (LOCK_PI, LOCK_PI2, TRYLOCK_PI, UNLOCK_PI,
WAIT_REQUEUE_PI, CMP_REQUEUE_PI) with the owner-TID word protocol, and futex_waitv.  A blocked
wait is re-run when woken (emukern's wait loops): ``task.woken_value`` says why it woke (0 a
wake, -ETIMEDOUT its timer, SIG_WAKE a signal), and ``task.futex`` what it was waiting for.
Keys are per address space: a futex shared between processes through MAP_SHARED memory is not
matched across them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emukern.errors import MemoryFault
from emukern.kernel import errno as E
from emukern.kernel.fs.meta import realtime_to_cycles
from emukern.kernel.signal import futex_core as fc
from emukern.kernel.signal.defs import ERESTARTNOINTR, ERESTARTSYS, SIG_WAKE, s32
from emukern.kernel.syscalls import FUTEX_PRIVATE
from emukern.kernel.sysret import BLOCK

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

FUTEX_WAIT, FUTEX_WAKE, FUTEX_FD, FUTEX_REQUEUE, FUTEX_CMP_REQUEUE, FUTEX_WAKE_OP = 0, 1, 2, 3, 4, 5
FUTEX_LOCK_PI, FUTEX_UNLOCK_PI, FUTEX_TRYLOCK_PI = 6, 7, 8
FUTEX_WAIT_BITSET, FUTEX_WAKE_BITSET, FUTEX_WAIT_REQUEUE_PI, FUTEX_CMP_REQUEUE_PI = 9, 10, 11, 12
FUTEX_LOCK_PI2 = 13
FUTEX_CLOCK_REALTIME = 256

CLOCK_REALTIME, CLOCK_MONOTONIC = 0, 1
FUTEX2_SIZE_MASK, FUTEX2_SIZE_U32, FUTEX2_PRIVATE = 0x3, 0x2, 128
FUTEX_WAITV_MAX = 128
# FUTEX_WAKE_OP's operations on *uaddr2 and its comparisons of the old value
_WAKE_OPS = {0: lambda old, arg: arg, 1: lambda old, arg: old + arg, 2: lambda old, arg: old | arg,
             3: lambda old, arg: old & ~arg, 4: lambda old, arg: old ^ arg}
_WAKE_CMPS = {0: lambda a, b: a == b, 1: lambda a, b: a != b, 2: lambda a, b: a < b,
              3: lambda a, b: a <= b, 4: lambda a, b: a > b, 5: lambda a, b: a >= b}


# ---- the robust list ------------------------------------------------------------------------
def sys_set_robust_list(k: "Kernel", cpu, task, head, length, *a):
    """Record the thread's robust-list head; exit walks it (futex_core.exit_robust_list)."""
    if length != fc.ROBUST_LIST_HEAD_SIZE:
        return -E.EINVAL
    task.robust_list = head
    return 0


def sys_get_robust_list(k: "Kernel", cpu, task, pid, head_ptr, len_ptr, *a):
    t = task if s32(pid) == 0 else fc.task_by_tid(k, s32(pid))
    if t is None:
        return -E.ESRCH
    try:
        task.mm.write(len_ptr, fc.ROBUST_LIST_HEAD_SIZE.to_bytes(8, "little"))
        task.mm.write(head_ptr, t.robust_list.to_bytes(8, "little"))
    except MemoryFault:
        return -E.EFAULT
    return 0


# ---- timeouts ----------------------------------------------------------------------------------
def _deadline(k: "Kernel", cpu, task, timeout: int, absolute: bool, realtime: bool) -> Any:
    """futex_init_timeout: the wake-up cycle for a timespec at ``timeout`` (None: no timeout),
    or a negative errno."""
    if not timeout:
        return None
    ts = task.mm.read(timeout, 16)
    sec, nsec = int.from_bytes(ts[:8], "little", signed=True), int.from_bytes(ts[8:], "little", signed=True)
    if sec < 0 or not 0 <= nsec < 10**9:
        return -E.EINVAL                  # timespec64_valid
    ns = sec * 10**9 + nsec               # (add_timer saturates: 2^40 s sleeps forever)
    if absolute and realtime:
        return realtime_to_cycles(k, ns)  # a wall-clock deadline (pthread_cond_timedwait)
    return k.clock.cycles_for_ns(ns) + (0 if absolute else cpu.now)


def _sleep(k: "Kernel", cpu, task, waiters: list[fc.FutexWaiter], wake: int | None) -> Any:
    """Queue the caller on every key of ``waiters`` and block, with a timer when ``wake`` is set;
    -ETIMEDOUT at once when that moment has passed."""
    if task.futex is not None:             # records a signal's wake left behind
        fc.unqueue_all(k, task)
    if wake is not None and wake <= cpu.now:
        return -E.ETIMEDOUT
    qs = [fc.enqueue(k, task, w) for w in waiters]
    task.futex = waiters if len(waiters) > 1 else waiters[0]
    task.waitqueues = list(qs)
    if wake is not None:
        k.sched.add_timer(task, wake)
    k.sched.block_current(cpu, task, "futex")
    return BLOCK


def _woken(k: "Kernel", task) -> Any:
    """A futex sleeper back in its syscall: (why it woke, its records), off every bucket."""
    why = task.woken_value
    task.woken_value = None
    return why, fc.unqueue_all(k, task)


# ---- the operations ----------------------------------------------------------------------------
def _wait(k, cpu, task, key, uaddr, val, bitset, wake) -> Any:
    if bitset == 0:
        return -E.EINVAL
    if task.woken_value is not None and task.futex is not None:
        why, _ = _woken(k, task)
        if why is SIG_WAKE:
            return -ERESTARTSYS
        return -E.ETIMEDOUT if why == -E.ETIMEDOUT else 0
    if isinstance(wake, int) and wake < 0 and wake > -4096:
        return wake
    if task.mm.read_u32(uaddr) != val & 0xFFFFFFFF:
        return -E.EAGAIN
    return _sleep(k, cpu, task, [fc.FutexWaiter(key, bitset)], wake)


def _requeue(k, cpu, task, key, key2, nr_wake, nr_requeue, cmpval, uaddr, pi: bool) -> int:
    """futex_requeue: wake ``nr_wake`` waiters of ``key`` and move up to ``nr_requeue`` more to
    ``key2``; with ``pi`` (CMP_REQUEUE_PI) the top waiter takes the PI futex at key2 if it is
    free, and the rest wait for its ownership."""
    if key == key2:
        return -E.EINVAL
    if nr_wake < 0 or nr_requeue < 0:
        return -E.EINVAL
    if pi and nr_wake != 1:
        return -E.EINVAL
    if cmpval is not None and task.mm.read_u32(uaddr) != cmpval & 0xFFFFFFFF:
        return -E.EAGAIN
    q = fc.queue_of(k, key, create=False)
    if q is None:
        return 0
    uaddr2 = key2[1]
    woken = moved = tried = taken = 0
    for t in list(q.waiters):
        w = q.entries.get(t)
        is_rq = w is not None and w.kind == "requeue_pi"
        if is_rq != pi or (pi and w is not None and w.target != key2):
            return -E.EINVAL              # a waiter of the other protocol, or for another PI futex
        if tried < nr_wake:
            tried += 1
            if not pi:
                fc.wake_waiter(k, cpu.now, q, t)
                woken += 1
                continue
            word = task.mm.read_u32(uaddr2)
            if word & fc.FUTEX_TID_MASK == 0:            # free: the top waiter owns it now
                task.mm.write_u32(uaddr2, (t.tid & fc.FUTEX_TID_MASK) | (word & fc.FUTEX_OWNER_DIED))
                fc.wake_waiter(k, cpu.now, q, t)
                woken += 1
                continue
            # owned: the top waiter is moved to wait for the lock, within nr_wake's count
        elif moved >= nr_requeue:
            break
        else:
            moved += 1
        if pi:
            task.mm.write_u32(uaddr2, task.mm.read_u32(uaddr2) | fc.FUTEX_WAITERS)
        fc.requeue(k, q, t, key2, "pi" if pi else "wait")
        taken += 1
    return woken + taken


def _wake_op(k, cpu, task, key, key2, uaddr2, nr_wake, nr_wake2, encoded) -> int:
    op, cmp = (encoded >> 28) & 7, (encoded >> 24) & 15
    oparg = (encoded >> 12) & 0xFFF
    oparg = oparg - 0x1000 if oparg & 0x800 else oparg
    cmparg = encoded & 0xFFF
    cmparg = cmparg - 0x1000 if cmparg & 0x800 else cmparg
    if (encoded >> 31) & 1:                  # FUTEX_OP_OPARG_SHIFT
        oparg = 1 << (oparg & 31)
    if op not in _WAKE_OPS or cmp not in _WAKE_CMPS:
        return -E.ENOSYS
    old = task.mm.read_u32(uaddr2)
    task.mm.write_u32(uaddr2, _WAKE_OPS[op](old, oparg) & 0xFFFFFFFF)
    n = fc.futex_wake(k, cpu.now, key, nr_wake)
    if n < 0:
        return n
    old_s = old - (1 << 32) if old & 0x80000000 else old
    if _WAKE_CMPS[cmp](old_s, cmparg):
        n2 = fc.futex_wake(k, cpu.now, key2, nr_wake2)
        if n2 < 0:
            return n2
        n += n2
    return n


def _lock_pi(k, cpu, task, key, uaddr, wake, trylock: bool) -> Any:
    """futex_lock_pi: take a free PI futex (its word becomes our TID), else set FUTEX_WAITERS
    and sleep until an unlock hands it over.  EDEADLK for our own lock, ESRCH for an owner TID
    that is no thread; an owner that died with the lock leaves FUTEX_OWNER_DIED for us."""
    if task.woken_value is not None and task.futex is not None:
        why, _ = _woken(k, task)
        if why is SIG_WAKE:
            return -ERESTARTNOINTR
        return -E.ETIMEDOUT if why == -E.ETIMEDOUT else 0
    if isinstance(wake, int) and -4096 < wake < 0:
        return wake
    word = task.mm.read_u32(uaddr)
    owner = word & fc.FUTEX_TID_MASK
    if owner == 0:
        task.mm.write_u32(uaddr, (task.tid & fc.FUTEX_TID_MASK) | (word & fc.FUTEX_OWNER_DIED)
                          | (word & fc.FUTEX_WAITERS))
        return 0
    if owner == task.tid & fc.FUTEX_TID_MASK:
        return -E.EDEADLK
    if fc.task_by_tid(k, owner) is None:
        if word & fc.FUTEX_OWNER_DIED:           # the dead owner's lock: ours, still marked
            task.mm.write_u32(uaddr, (task.tid & fc.FUTEX_TID_MASK) | (word & ~fc.FUTEX_TID_MASK))
            return 0
        return -E.ESRCH
    if trylock:
        return -E.EAGAIN
    task.mm.write_u32(uaddr, word | fc.FUTEX_WAITERS)
    return _sleep(k, cpu, task, [fc.FutexWaiter(key, kind="pi")], wake)


def _unlock_pi(k, cpu, task, key, uaddr) -> int:
    word = task.mm.read_u32(uaddr)
    if word & fc.FUTEX_TID_MASK != task.tid & fc.FUTEX_TID_MASK:
        return -E.EPERM
    if not fc.pi_handover(k, cpu.now, task.mm, uaddr, key):
        task.mm.write_u32(uaddr, 0)
    return 0


def _wait_requeue_pi(k, cpu, task, key, key2, uaddr, val, wake) -> Any:
    """futex_wait_requeue_pi: wait on a plain futex to be moved (CMP_REQUEUE_PI) onto the PI
    futex ``key2``, returning 0 once it owns that lock.  A signal before the requeue restarts the
    wait; after it (while waiting for the lock) the call ends with EWOULDBLOCK, as in Linux."""
    if task.woken_value is not None and task.futex is not None:
        why, recs = _woken(k, task)
        requeued = bool(recs) and recs[0].kind == "pi"
        if why is SIG_WAKE:
            return -E.EAGAIN if requeued else -ERESTARTNOINTR
        return -E.ETIMEDOUT if why == -E.ETIMEDOUT else 0
    if key == key2:
        return -E.EINVAL
    if isinstance(wake, int) and -4096 < wake < 0:
        return wake
    if task.mm.read_u32(uaddr) != val & 0xFFFFFFFF:
        return -E.EAGAIN
    return _sleep(k, cpu, task, [fc.FutexWaiter(key, kind="requeue_pi", target=key2)], wake)


def sys_futex(k: "Kernel", cpu, task, uaddr, op, val, timeout, uaddr2, val3, *a):
    cmd = op & ~(FUTEX_PRIVATE | FUTEX_CLOCK_REALTIME)
    realtime = bool(op & FUTEX_CLOCK_REALTIME)
    cpu.charge(k.cost.futex_op)
    if realtime and cmd not in (FUTEX_WAIT_BITSET, FUTEX_WAIT_REQUEUE_PI, FUTEX_LOCK_PI2):
        return -E.ENOSYS
    if uaddr % 4:
        return -E.EINVAL
    private = bool(op & FUTEX_PRIVATE)
    key = fc.futex_key(task, uaddr, private)
    try:
        if cmd in (FUTEX_WAIT, FUTEX_WAIT_BITSET):
            bitset = fc.FUTEX_BITSET_MATCH_ANY if cmd == FUTEX_WAIT else val3 & 0xFFFFFFFF
            wake = None if task.woken_value is not None else \
                _deadline(k, cpu, task, timeout, cmd == FUTEX_WAIT_BITSET, realtime)
            return _wait(k, cpu, task, key, uaddr, val, bitset, wake)
        if cmd in (FUTEX_WAKE, FUTEX_WAKE_BITSET):
            bitset = fc.FUTEX_BITSET_MATCH_ANY if cmd == FUTEX_WAKE else val3 & 0xFFFFFFFF
            if bitset == 0:
                return -E.EINVAL
            return fc.futex_wake(k, cpu.now, key, max(0, s32(val)), bitset)
        if cmd in (FUTEX_REQUEUE, FUTEX_CMP_REQUEUE, FUTEX_CMP_REQUEUE_PI):
            if uaddr2 % 4:
                return -E.EINVAL
            return _requeue(k, cpu, task, key, fc.futex_key(task, uaddr2, private), s32(val), s32(timeout & 0xFFFFFFFF),
                            None if cmd == FUTEX_REQUEUE else val3, uaddr, cmd == FUTEX_CMP_REQUEUE_PI)
        if cmd == FUTEX_WAKE_OP:
            if uaddr2 % 4:
                return -E.EINVAL
            return _wake_op(k, cpu, task, key, fc.futex_key(task, uaddr2, private), uaddr2, max(0, s32(val)),
                            max(0, s32(timeout & 0xFFFFFFFF)), val3 & 0xFFFFFFFF)
        if cmd in (FUTEX_LOCK_PI, FUTEX_LOCK_PI2, FUTEX_TRYLOCK_PI):
            wake = None
            if cmd != FUTEX_TRYLOCK_PI and task.woken_value is None:
                # LOCK_PI's deadline is absolute CLOCK_REALTIME; LOCK_PI2 chooses by the flag
                wake = _deadline(k, cpu, task, timeout, True, realtime or cmd == FUTEX_LOCK_PI)
            return _lock_pi(k, cpu, task, key, uaddr, wake, cmd == FUTEX_TRYLOCK_PI)
        if cmd == FUTEX_UNLOCK_PI:
            return _unlock_pi(k, cpu, task, key, uaddr)
        if cmd == FUTEX_WAIT_REQUEUE_PI:
            if uaddr2 % 4:
                return -E.EINVAL
            wake = None if task.woken_value is not None else _deadline(k, cpu, task, timeout, True, realtime)
            return _wait_requeue_pi(k, cpu, task, key, fc.futex_key(task, uaddr2, private), uaddr, val, wake)
    except MemoryFault:              # a bad user pointer
        return -E.EFAULT
    return -E.ENOSYS


def sys_futex_waitv(k: "Kernel", cpu, task, waiters, nr, flags, timeout, clockid, *a):
    """futex_waitv: sleep on up to 128 futexes at once; returns the index of the one woken."""
    if task.woken_value is not None and task.futex is not None:
        why, recs = _woken(k, task)
        if why is SIG_WAKE:
            return -ERESTARTSYS
        if why == -E.ETIMEDOUT:
            return -E.ETIMEDOUT
        hit = [w.index for w in recs if w.woken]
        return hit[0] if hit else 0
    cpu.charge(k.cost.futex_op)
    if flags or not 0 < nr <= FUTEX_WAITV_MAX:
        return -E.EINVAL
    wake = None
    try:
        if timeout:
            if clockid not in (CLOCK_REALTIME, CLOCK_MONOTONIC):
                return -E.EINVAL
            wake = _deadline(k, cpu, task, timeout, True, clockid == CLOCK_REALTIME)
            if isinstance(wake, int) and -4096 < wake < 0:
                return wake
        recs, vals = [], []
        for i in range(nr):
            raw = task.mm.read(waiters + 24 * i, 24)
            val = int.from_bytes(raw[:8], "little")
            uaddr = int.from_bytes(raw[8:16], "little")
            wflags = int.from_bytes(raw[16:20], "little")
            if int.from_bytes(raw[20:24], "little") or wflags & ~(FUTEX2_SIZE_MASK | FUTEX2_PRIVATE) \
                    or wflags & FUTEX2_SIZE_MASK != FUTEX2_SIZE_U32 or uaddr % 4:
                return -E.EINVAL
            if val >> 32:
                return -E.EINVAL            # a value wider than the 32-bit futex
            recs.append(fc.FutexWaiter(fc.futex_key(task, uaddr, bool(wflags & FUTEX2_PRIVATE)), index=i))
            vals.append((uaddr, val))
        for uaddr, val in vals:
            if task.mm.read_u32(uaddr) != val:
                return -E.EAGAIN
    except MemoryFault:
        return -E.EFAULT
    return _sleep(k, cpu, task, recs, wake)
