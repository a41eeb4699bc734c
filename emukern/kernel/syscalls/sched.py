"""sched_* calls <-> kernel/sched/syscalls.c (kernel/sched/core.c in older kernels).

sched_yield, CPU affinity over the simulated CPUs, the policy and priority calls (their checks
are ``_setscheduler`` in sys.py), the priority ranges, and ``sys_sched_rr_get_interval`` (the RR
slice, or the fair class's slice in whole jiffies).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.syscalls import sys as syscalls_sys
from emukern.kernel.cred import (
    BASE_SLICE_NS,
    RR_TIMESLICE_NS,
    SCHED_FIFO,
    SCHED_RESET_ON_FORK,
    SCHED_RR,
    _u32,
)
from emukern.kernel.task import TaskState

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_sched_yield(k: "Kernel", cpu, task, *a):
    """do_sched_yield: the class's yield (the fair class pushes the deadline), then schedule."""
    cpu.charge(k.cost.syscall_body)
    k.sched.yield_current(cpu)
    return 0


# ---- scheduling ----------------------------------------------------------------------------
def sys_sched_setaffinity(k: "Kernel", cpu, task, pid, size, mask_ptr, *a):
    target = task if pid == 0 else k.tasks.get(pid)
    if target is None or not target.alive:
        return -E.ESRCH
    if size == 0:
        return -E.EINVAL
    raw = int.from_bytes(task.mm.read(mask_ptr, min(size, 8)), "little")
    allowed = frozenset(i for i in range(len(k.percpu)) if raw >> i & 1)
    if not allowed:
        return -E.EINVAL
    target.affinity = allowed
    cpu.charge(k.cost.syscall_body * 5)
    if target is task and cpu.index not in allowed:
        # migrate: go back to the scheduler, which re-queues us on an allowed CPU
        k.percpu[cpu.index].need_resched = True
        task.state = TaskState.RUNNABLE
    return 0


def sys_sched_getaffinity(k: "Kernel", cpu, task, pid, size, mask_ptr, *a):
    target = task if pid == 0 else k.tasks.get(pid)
    if target is None or not target.alive:
        return -E.ESRCH
    if size < 8 or size % 8:
        return -E.EINVAL
    n = len(k.percpu)
    allowed = target.affinity or frozenset(range(n))
    mask = sum(1 << i for i in allowed)
    task.mm.write(mask_ptr, mask.to_bytes(8, "little"))
    return 8


def sys_sched_getscheduler(k: "Kernel", cpu, task, pid, *a):
    t = syscalls_sys._sched_target(k, task, pid)
    if isinstance(t, int):
        return t
    cpu.charge(k.cost.syscall_body)
    return t.sched_policy | (SCHED_RESET_ON_FORK if t.sched_reset_on_fork else 0)


def sys_sched_getparam(k: "Kernel", cpu, task, pid, param, *a):
    if not param:
        return -E.EINVAL
    t = syscalls_sys._sched_target(k, task, pid)
    if isinstance(t, int):
        return t
    if task.mm.find(param) is None:
        return -E.EFAULT
    task.mm.write_u32(param, t.rt_priority)
    cpu.charge(k.cost.syscall_body)
    return 0


def sys_sched_setscheduler(k: "Kernel", cpu, task, pid, policy, param, *a):
    return syscalls_sys._setscheduler(k, cpu, task, pid, _u32(policy), param)


def sys_sched_setparam(k: "Kernel", cpu, task, pid, param, *a):
    return syscalls_sys._setscheduler(k, cpu, task, pid, None, param)


def sys_sched_get_priority_max(k: "Kernel", cpu, task, policy, *a):
    return syscalls_sys._prio_limit(k, cpu, policy, True)


def sys_sched_get_priority_min(k: "Kernel", cpu, task, policy, *a):
    return syscalls_sys._prio_limit(k, cpu, policy, False)


def sys_sched_rr_get_interval(k: "Kernel", cpu, task, pid, interval, *a):
    """The round-robin time slice: RR_TIMESLICE for SCHED_RR, 0 for FIFO, and for the fair
    class the task's slice in whole jiffies (get_rr_interval_fair: NS_TO_JIFFIES)."""
    t = syscalls_sys._sched_target(k, task, pid)
    if isinstance(t, int):
        return t
    if t.sched_policy == SCHED_RR:
        ns = RR_TIMESLICE_NS
    elif t.sched_policy == SCHED_FIFO:
        ns = 0
    else:
        jiffy = 10**9 // k.clock.hz
        ns = BASE_SLICE_NS // jiffy * jiffy
    if task.mm.find(interval) is None:
        return -E.EFAULT
    task.mm.write(interval, (ns // 10**9).to_bytes(8, "little") + (ns % 10**9).to_bytes(8, "little"))
    cpu.charge(k.cost.syscall_body)
    return 0
