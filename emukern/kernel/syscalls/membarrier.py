"""membarrier <-> kernel/sched/membarrier.c.

``sys_membarrier`` answers MEMBARRIER_CMD_QUERY, keeps the per-process registrations and
returns EPERM for a private expedited command before its registration; the rseq commands are
not offered (emukern has no rseq).  The barrier itself needs no work: each simulated CPU is a
Unicorn instance whose stores the others see at once, and a syscall is already a full barrier
on the calling CPU.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.mm.vma import (
    MB_GET_REGISTRATIONS,
    MB_GLOBAL,
    MB_GLOBAL_EXP,
    MB_PRIV_EXP,
    MB_PRIV_EXP_RSEQ,
    MB_PRIV_EXP_SYNC_CORE,
    MB_QUERY,
    MB_REG_GLOBAL_EXP,
    MB_REG_PRIV_EXP,
    MB_REG_PRIV_EXP_SYNC_CORE,
    MEMBARRIER_CMD_FLAG_CPU,
)

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


# ---- the rest --------------------------------------------------------------------------
def sys_membarrier(k: "Kernel", cpu, task, cmd, flags, cpu_id, *a):
    """kernel/sched/membarrier.c: QUERY's mask of what is supported (all but the rseq pair:
    emukern has no rseq), registration per process, EPERM for a private expedited command
    before its registration.  Each simulated CPU is one Unicorn whose stores the others see
    at once, and a syscall is already a full barrier on the calling CPU: beyond the checks
    there is nothing to do."""
    cpu.charge(k.cost.syscall_body)
    cmd &= 0xFFFFFFFF
    flags &= 0xFFFFFFFF
    supported = (MB_GLOBAL | MB_GLOBAL_EXP | MB_REG_GLOBAL_EXP | MB_PRIV_EXP | MB_REG_PRIV_EXP
                 | MB_PRIV_EXP_SYNC_CORE | MB_REG_PRIV_EXP_SYNC_CORE | MB_GET_REGISTRATIONS)
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
    if cmd in (MB_REG_GLOBAL_EXP, MB_REG_PRIV_EXP, MB_REG_PRIV_EXP_SYNC_CORE):
        regs.add(cmd)
        return 0
    if cmd == MB_PRIV_EXP:
        return 0 if MB_REG_PRIV_EXP in regs else -E.EPERM
    if cmd == MB_PRIV_EXP_SYNC_CORE:
        return 0 if MB_REG_PRIV_EXP_SYNC_CORE in regs else -E.EPERM
    return -E.EINVAL
