"""membarrier <-> kernel/sched/membarrier.c.

``sys_membarrier`` answers MEMBARRIER_CMD_QUERY, keeps the per-process registrations and
returns EPERM for a private expedited command before its registration.  The memory barrier
itself needs no work: each simulated CPU is a Unicorn instance whose stores the others see at
once, and a syscall is already a full barrier on the calling CPU.  The rseq pair does have work:
MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ must make every other CPU now running a thread of the
caller's mm (or only the one CPU named with MEMBARRIER_CMD_FLAG_CPU) restart the rseq critical
section that thread is in — Linux's ipi_rseq marks the thread preempted (rseq_preempt) and the
interrupt's return to user space moves it to its abort handler; here the thread is marked the
same way and its CPU kicked into the kernel, as a signal's wake-up kicks it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.signal import rseq as signal_rseq
from emukern.kernel.mm.vma import (
    MB_GET_REGISTRATIONS,
    MB_GLOBAL,
    MB_GLOBAL_EXP,
    MB_PRIV_EXP,
    MB_PRIV_EXP_RSEQ,
    MB_PRIV_EXP_SYNC_CORE,
    MB_QUERY,
    MB_REG_PRIV_EXP_RSEQ,
    MB_REG_GLOBAL_EXP,
    MB_REG_PRIV_EXP,
    MB_REG_PRIV_EXP_SYNC_CORE,
    MEMBARRIER_CMD_FLAG_CPU,
)

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def _ipi_rseq(k: "Kernel", cpu, task, cpu_id: int) -> None:
    """membarrier_private_expedited with MEMBARRIER_FLAG_RSEQ: the IPI (ipi_rseq) to the other
    CPUs whose current thread shares the caller's mm, or to ``cpu_id`` alone (>= 0) when that
    one runs such a thread.  A CPU number that is out of range or runs something else is no
    error: there is nothing to restart there (Linux returns 0 too)."""
    mm = task.mm
    for pc in k.percpu:
        if cpu_id >= 0 and pc.index != cpu_id:
            continue
        t = pc.curr
        if t is None or t.mm is not mm or pc.index == cpu.index or not t.alive:
            continue
        if t.rseq is None:
            continue                    # nothing to restart: the IPI only costs a barrier
        signal_rseq.rseq_preempt(t)     # its critical section restarts on its way back
        pc.need_resched = True          # the IPI: that CPU enters the kernel soon
        k.cpus[pc.index].stop()


def sys_membarrier(k: "Kernel", cpu, task, cmd, flags, cpu_id, *a):
    """kernel/sched/membarrier.c: QUERY's mask of what is supported, registration per process,
    EPERM for a private expedited command before its registration, the rseq restart IPI."""
    cpu.charge(k.cost.syscall_body)
    cmd &= 0xFFFFFFFF
    flags &= 0xFFFFFFFF
    supported = (MB_GLOBAL | MB_GLOBAL_EXP | MB_REG_GLOBAL_EXP | MB_PRIV_EXP | MB_REG_PRIV_EXP
                 | MB_PRIV_EXP_SYNC_CORE | MB_REG_PRIV_EXP_SYNC_CORE | MB_PRIV_EXP_RSEQ
                 | MB_REG_PRIV_EXP_RSEQ | MB_GET_REGISTRATIONS)
    if cmd == MB_PRIV_EXP_RSEQ:
        if flags & ~MEMBARRIER_CMD_FLAG_CPU:
            return -E.EINVAL
    elif flags:
        return -E.EINVAL
    regs = task.mm.__dict__.setdefault("_membarrier", set())
    if cmd == MB_QUERY:
        return supported
    if cmd == MB_GET_REGISTRATIONS:
        return sum(regs)
    if cmd in (MB_GLOBAL, MB_GLOBAL_EXP):
        return 0
    if cmd in (MB_REG_GLOBAL_EXP, MB_REG_PRIV_EXP, MB_REG_PRIV_EXP_SYNC_CORE, MB_REG_PRIV_EXP_RSEQ):
        regs.add(cmd)
        return 0
    if cmd == MB_PRIV_EXP:
        return 0 if MB_REG_PRIV_EXP in regs else -E.EPERM
    if cmd == MB_PRIV_EXP_SYNC_CORE:
        return 0 if MB_REG_PRIV_EXP_SYNC_CORE in regs else -E.EPERM
    if cmd == MB_PRIV_EXP_RSEQ:
        if MB_REG_PRIV_EXP_RSEQ not in regs:
            return -E.EPERM
        # cpu_id is a signed int, ignored (-1: every CPU) without MEMBARRIER_CMD_FLAG_CPU;
        # a negative one with the flag means every CPU too
        target = cpu_id & 0xFFFFFFFF if flags & MEMBARRIER_CMD_FLAG_CPU else -1
        if target >= 1 << 31:
            target -= 1 << 32
        _ipi_rseq(k, cpu, task, target)
        return 0
    return -E.EINVAL
