"""futex / set_robust_list <-> kernel/futex/syscalls.c.

``sys_futex`` implements FUTEX_WAIT and FUTEX_WAKE and their _BITSET forms (the bitset is not
used to narrow wake-ups: every waiter matches), on wait queues keyed by (mm, address) in
``Kernel.futex_queues``; a timeout is a scheduler timer in simulated time.  The robust list is
accepted and ignored.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.files import WaitQueue
from emukern.kernel.fs.meta import realtime_to_cycles
from emukern.kernel.syscalls import (
    FUTEX_PRIVATE,
    FUTEX_WAIT,
    FUTEX_WAIT_BITSET,
    FUTEX_WAKE,
    FUTEX_WAKE_BITSET,
)
from emukern.kernel.sysret import BLOCK, s64

FUTEX_CLOCK_REALTIME = 256

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_set_robust_list(k: "Kernel", cpu, task, *a):
    return 0


# ---- futex ---------------------------------------------------------------------------------
def sys_futex(k: "Kernel", cpu, task, uaddr, op, val, timeout, uaddr2, val3, *a):
    cmd = op & ~FUTEX_PRIVATE & 0x7F          # FUTEX_CLOCK_REALTIME (256) falls away too
    cpu.charge(k.cost.futex_op)
    if uaddr % 4:
        return -E.EINVAL
    key = (id(task.mm), uaddr)
    if cmd in (FUTEX_WAIT_BITSET, FUTEX_WAKE_BITSET) and val3 & 0xFFFFFFFF == 0:
        return -E.EINVAL
    absolute = cmd == FUTEX_WAIT_BITSET       # the bitset form takes an absolute timeout
    if cmd == FUTEX_WAIT_BITSET:
        cmd = FUTEX_WAIT                       # every waiter matches every bitset (no bitset
    elif cmd == FUTEX_WAKE_BITSET:             # user in emukern narrows its wake-ups)
        cmd = FUTEX_WAKE
    if cmd == FUTEX_WAIT:
        if task.woken_value is not None:            # woken by FUTEX_WAKE
            task.woken_value = None
            return 0
        cur = task.mm.read_u32(uaddr)
        if cur != (val & 0xFFFFFFFF):
            return -E.EAGAIN
        wq = k.futex_queues.setdefault(key, WaitQueue("futex"))
        wq.add(task)
        task.waitqueues = [wq]
        if timeout:
            ts = task.mm.read(timeout, 16)
            sec, nsec = int.from_bytes(ts[:8], "little", signed=True), int.from_bytes(ts[8:], "little", signed=True)
            if sec < 0 or not 0 <= nsec < 10**9:
                wq.remove(task)
                return -E.EINVAL          # timespec64_valid
            ns = sec * 10**9 + nsec       # (add_timer saturates: 2^40 s sleeps forever)
            if absolute and op & FUTEX_CLOCK_REALTIME:     # a wall-clock deadline (pthread_cond_timedwait)
                wake = realtime_to_cycles(k, ns)
            else:
                wake = k.clock.cycles_for_ns(ns) + (0 if absolute else cpu.now)
            if wake <= cpu.now:
                wq.remove(task)
                return -E.ETIMEDOUT
            k.sched.add_timer(task, wake)
        k.sched.block_current(cpu, task, "futex")
        return BLOCK
    if cmd == FUTEX_WAKE:
        wq = k.futex_queues.get(key)
        if wq is None:
            return 0
        return k.sched.wake_queue(wq, cpu.now, nr=max(0, s64(val)), value=0)
    return -E.ENOSYS
