"""ipc/sem.c: System V semaphore sets.

A semop is all-or-nothing: the operations are tried in order on a copy of the values, and
either all of them apply or none does (perform_atomic_semop).  A caller that would block
sleeps on the set's wait queue; every change of the set wakes all its sleepers, which try
their operations again (Linux wakes only those whose operations can now complete; the
outcome is the same, the order among sleepers may differ).  What a sleeper waits for is kept
in ``waiting`` so GETNCNT/GETZCNT can count it.

SEM_UNDO adjustments are kept per thread group (threads share them, as glibc's threads are
created with CLONE_SYSVSEM) and applied when the group's last thread exits (exit_sem).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.kernel.files import WaitQueue
from emukern.kernel.ipc.util import EIDRM, IpcNamespace, KernIpcPerm

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

SEMVMX = 32767
SEMAEM = SEMVMX
SEM_UNDO = 0x1000
GETPID, GETVAL, GETALL, GETNCNT, GETZCNT, SETVAL, SETALL = 11, 12, 13, 14, 15, 16, 17
SEM_STAT, SEM_INFO, SEM_STAT_ANY = 18, 19, 20
SEMID64_DS = struct.Struct("<48sqqQ8x8x")      # 88 bytes
SEMBUF = struct.Struct("<HhH")                  # struct sembuf: num, op, flg (6 bytes)


@dataclass(eq=False)
class SemArray:
    """``struct sem_array``: the values, the pid of each one's last operation, the times."""

    perm: KernIpcPerm
    vals: list[int]
    pids: list[int]
    ctime: int
    otime: int = 0
    wq: WaitQueue = field(default_factory=lambda: WaitQueue("semop"))
    waiting: dict[Any, tuple[int, int]] = field(default_factory=dict)   # task -> (num, op)

    def count(self, num: int, zero: bool) -> int:
        """count_semzcnt/count_semncnt: the sleepers whose blocking operation on ``num`` waits
        for zero (op 0) or for an increase (op < 0)."""
        return sum(1 for t, (n, op) in self.waiting.items()
                   if n == num and t in self.wq.waiters and ((op == 0) if zero else (op < 0)))


def try_semop(sma: SemArray, sops: list[tuple[int, int, int]], adj: list[int] | None,
              pid: int) -> tuple[int, tuple[int, int] | None]:
    """perform_atomic_semop: (0, None) when every operation applied; (-ERANGE, None) when a
    value or an undo adjustment would leave its range; (1, (num, op)) when the operation
    ``(num, op)`` would block.  Nothing changes unless all apply."""
    vals = list(sma.vals)
    newadj = list(adj) if adj is not None else None
    for num, op, flg in sops:
        cur = vals[num]
        if op == 0:
            if cur:
                return 1, (num, op)
            continue
        res = cur + op
        if res < 0:
            return 1, (num, op)
        if res > SEMVMX:
            return -E.ERANGE, None
        if flg & SEM_UNDO and newadj is not None:
            undo = newadj[num] - op
            if undo < -SEMAEM - 1 or undo > SEMAEM:
                return -E.ERANGE, None
            newadj[num] = undo
        vals[num] = res
    for num, op, _flg in sops:
        sma.pids[num] = pid
    sma.vals[:] = vals
    if adj is not None and newadj is not None:
        adj[:] = newadj
    return 0, None


def undo_list(ns: IpcNamespace, tgid: int, semid: int, nsems: int) -> list[int]:
    """find_alloc_undo: the group's adjustments for one set, made on first use."""
    per = ns.undo.setdefault(tgid, {})
    got = per.get(semid)
    if got is None or len(got) != nsems:
        got = per[semid] = [0] * nsems
    return got


def clear_undo(ns: IpcNamespace, semid: int, num: int | None) -> None:
    """SETVAL/SETALL reset the adjustments every group holds for the values they set."""
    for per in ns.undo.values():
        adj = per.get(semid)
        if adj is not None:
            if num is None:
                adj[:] = [0] * len(adj)
            else:
                adj[num] = 0


def freeary(k: "Kernel", ns: IpcNamespace, sma: SemArray, now: int) -> None:
    """IPC_RMID: the id is gone, every group's adjustments for it go, and every sleeper is
    woken to fail with EIDRM."""
    ns.sem.remove(sma)
    ns.used_sems -= len(sma.vals)
    for per in ns.undo.values():
        per.pop(sma.perm.id, None)
    k.sched.wake_queue(sma.wq, now, value=-EIDRM)


def exit_sem(k: "Kernel", ns: IpcNamespace, tgid: int, now: int) -> None:
    """exit_sem: the group's adjustments are added to the values they were made on, each
    result clamped to [0, SEMVMX], and the sleepers of those sets try again."""
    per = ns.undo.pop(tgid, None)
    if not per:
        return
    for semid, adj in per.items():
        sma = ns.sem.obtain(semid)
        if sma is None:
            continue
        for i, a in enumerate(adj):
            if a:
                sma.vals[i] = min(SEMVMX, max(0, sma.vals[i] + a))
                sma.pids[i] = tgid
        k.sched.wake_queue(sma.wq, now)
