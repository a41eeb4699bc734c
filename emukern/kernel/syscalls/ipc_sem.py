"""semget / semop / semtimedop / semctl <-> ipc/sem.c (the sets: kernel/ipc/sem.py).

A semop that cannot proceed sleeps on the set and runs again from the start when woken
(Linux's retry loop): a removal wakes it with EIDRM, its timeout with EAGAIN, a signal with
EINTR.  semtimedop's deadline is kept across those re-runs so a wake-up that finds nothing
to do does not restart the clock.
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.ipc import sem as ipc_sem
from emukern.kernel.ipc import util as ipc_util
from emukern.kernel.ipc.sem import (
    GETALL,
    GETNCNT,
    GETPID,
    GETVAL,
    GETZCNT,
    SEMBUF,
    SEMID64_DS,
    SEMVMX,
    SETALL,
    SETVAL,
    SemArray,
)
from emukern.kernel.ipc.util import EIDRM, IPC_INFO, IPC_NOWAIT, IPC_RMID, IPC_SET, IPC_STAT, S_IRUGO, S_IWUGO
from emukern.kernel.syscalls.ipc_shm import _int

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

_SEMINFO = struct.Struct("<10i")


def sys_semget(k: "Kernel", cpu, task, key, nsems, semflg, *a):
    cpu.charge(k.cost.syscall_body)
    ns = ipc_util.ipc_ns(k)
    key, nsems, flg = _int(key), _int(nsems), _int(semflg)
    semmsl, semmns, _opm, _mni = ns.sem_ctls
    if nsems < 0 or nsems > semmsl:
        return -E.EINVAL

    def create() -> int:
        """newary: a set of at least one semaphore, within SEMMNS over the namespace."""
        if not nsems:
            return -E.EINVAL
        if ns.used_sems + nsems > semmns:
            return -ipc_util.ENOSPC
        now = ipc_util.now_seconds(k, cpu)
        sma = SemArray(ipc_util.new_perm(task, key, flg), [0] * nsems, [0] * nsems, ctime=now)
        ident = ns.sem.add(sma)
        if ident >= 0:
            ns.used_sems += nsems
        return ident

    def more_checks(sma: SemArray) -> int:
        return -E.EINVAL if nsems > len(sma.vals) else 0     # sem_more_checks

    return ipc_util.ipcget(task, ns.sem, key, flg, create, more_checks)


def sys_semop(k: "Kernel", cpu, task, semid, tsops, nsops, *a):
    return do_semtimedop(k, cpu, task, semid, tsops, nsops, 0)


def sys_semtimedop(k: "Kernel", cpu, task, semid, tsops, nsops, timeout, *a):
    return do_semtimedop(k, cpu, task, semid, tsops, nsops, timeout)


def do_semtimedop(k: "Kernel", cpu, task, semid, tsops, nsops, timeout):
    """The argument checks in Linux's order (E2BIG, EINVAL, EFAULT, the timeout, a negative id), the set
    (EINVAL), EFBIG for a semaphore number past its end, EACCES, then the operations."""
    cpu.charge(k.cost.syscall_body)
    ns = ipc_util.ipc_ns(k)
    woke = ipc_util.rerun_wake(k, ns, task)
    if woke == -EIDRM:
        ns.deadlines.pop(task.tid, None)
        return -EIDRM
    semid = _int(semid)
    # do_semtimedop: the count against SEMOPM first, then the copies; the id is looked at only
    # after them, in __do_semtimedop (Linux 5.x on)
    if nsops > ns.sem_ctls[2]:
        return -E.E2BIG
    if nsops < 1:
        return -E.EINVAL
    raw = task.mm.read(tsops, SEMBUF.size * nsops)
    sops = [SEMBUF.unpack_from(raw, i * SEMBUF.size) for i in range(nsops)]
    deadline = ns.deadlines.get(task.tid)
    if timeout and deadline is None:
        ts = task.mm.read(timeout, 16)
        sec = int.from_bytes(ts[:8], "little", signed=True)
        nsec = int.from_bytes(ts[8:], "little", signed=True)
        if sec < 0 or not 0 <= nsec < 10**9:
            return -E.EINVAL
        deadline = cpu.now + k.clock.cycles_for_ns(sec * 10**9 + nsec)
    if semid < 0:
        return -E.EINVAL
    undos = any(flg & ipc_sem.SEM_UNDO for _n, _o, flg in sops)
    sma = ns.sem.obtain(semid)
    if sma is None:
        ns.deadlines.pop(task.tid, None)
        return -E.EINVAL
    if max(n for n, _o, _f in sops) >= len(sma.vals):
        return -ipc_util.EFBIG
    alter = any(op for _n, op, _f in sops)
    if ipc_util.ipcperms(task, sma.perm, S_IWUGO if alter else S_IRUGO):
        return -E.EACCES
    adj = ipc_sem.undo_list(ns, task.tgid, semid, len(sma.vals)) if undos else None
    err, blocking = ipc_sem.try_semop(sma, sops, adj, task.tgid)
    sma.waiting.pop(task, None)
    if err == 0:
        ns.deadlines.pop(task.tid, None)
        if alter:
            sma.otime = ipc_util.now_seconds(k, cpu)
            k.sched.wake_queue(sma.wq, cpu.now)      # update_queue: others may go on now
        else:
            sma.otime = ipc_util.now_seconds(k, cpu)
        return 0
    if err < 0:
        ns.deadlines.pop(task.tid, None)
        return err
    assert blocking is not None
    flg = next(f for n, o, f in sops if (n, o) == blocking)
    if flg & IPC_NOWAIT:
        return -E.EAGAIN
    if deadline is not None and (woke == -E.ETIMEDOUT or cpu.now >= deadline):
        ns.deadlines.pop(task.tid, None)
        return -E.EAGAIN
    if deadline is not None:
        ns.deadlines[task.tid] = deadline
    sma.waiting[task] = blocking
    return ipc_util.ipc_sleep(k, cpu, task, sma.wq, "semop", deadline)


def sys_semctl(k: "Kernel", cpu, task, semid, semnum, cmd, arg, *a):
    cpu.charge(k.cost.syscall_body)
    ns = ipc_util.ipc_ns(k)
    semid, semnum, cmd = _int(semid), _int(semnum), _int(cmd)
    mm = task.mm
    if semid < 0:
        return -E.EINVAL
    semmsl, semmns, semopm, semmni = ns.sem_ctls
    if cmd in (IPC_INFO, ipc_sem.SEM_INFO):
        info = (1024, semmns, semmni if cmd == IPC_INFO else len(ns.sem.objs), 256, semmsl, semopm,
                SEMVMX + 1 if cmd == IPC_INFO else ns.used_sems, 10, SEMVMX, ipc_sem.SEMAEM)
        mm.write(arg, _SEMINFO.pack(*info))
        return max(ns.sem.objs, default=0)
    if cmd in (ipc_sem.SEM_STAT, ipc_sem.SEM_STAT_ANY):
        sma = ns.sem.objs.get(semid)
        if sma is None:
            return -E.EINVAL
        if cmd == ipc_sem.SEM_STAT and ipc_util.ipcperms(task, sma.perm, S_IRUGO):
            return -E.EACCES
        mm.write(arg, SEMID64_DS.pack(sma.perm.pack(), sma.otime, sma.ctime, len(sma.vals)))
        return sma.perm.id
    if cmd == SETVAL:
        val = _int(arg)
        if val > SEMVMX or val < 0:
            return -E.ERANGE                    # before the set is even looked up
    raw = mm.read(arg, SEMID64_DS.size) if cmd == IPC_SET else b""
    if cmd not in (IPC_STAT, IPC_SET, IPC_RMID, GETALL, SETALL, GETVAL, SETVAL, GETPID, GETNCNT, GETZCNT):
        return -E.EINVAL
    sma = ns.sem.obtain(semid)
    if sma is None:
        return -E.EINVAL
    nsems = len(sma.vals)
    now = ipc_util.now_seconds(k, cpu)
    if cmd in (IPC_SET, IPC_RMID):
        if not ipc_util.may_change(task, sma.perm):
            return -E.EPERM
        if cmd == IPC_RMID:
            ipc_sem.freeary(k, ns, sma, cpu.now)
            return 0
        _key, uid, gid, _cu, _cg, mode = struct.unpack_from("<iIIIII", raw)
        ipc_util.set_perm(task, sma.perm, uid, gid, mode)
        sma.ctime = now
        return 0
    if cmd == SETVAL:
        if semnum < 0 or semnum >= nsems:
            return -E.EINVAL
        if ipc_util.ipcperms(task, sma.perm, S_IWUGO):
            return -E.EACCES
        ipc_sem.clear_undo(ns, semid, semnum)
        sma.vals[semnum] = _int(arg)
        sma.pids[semnum] = task.tgid
        sma.ctime = now
        k.sched.wake_queue(sma.wq, cpu.now)
        return 0
    if ipc_util.ipcperms(task, sma.perm, S_IWUGO if cmd == SETALL else S_IRUGO):
        return -E.EACCES
    if cmd == IPC_STAT:
        mm.write(arg, SEMID64_DS.pack(sma.perm.pack(), sma.otime, sma.ctime, nsems))
        return 0
    if cmd == GETALL:
        mm.write(arg, struct.pack(f"<{nsems}H", *sma.vals))
        return 0
    if cmd == SETALL:
        vals = struct.unpack(f"<{nsems}H", mm.read(arg, 2 * nsems))
        if any(v > SEMVMX for v in vals):
            return -E.ERANGE
        ipc_sem.clear_undo(ns, semid, None)
        sma.vals[:] = vals
        sma.pids[:] = [task.tgid] * nsems
        sma.ctime = now
        k.sched.wake_queue(sma.wq, cpu.now)
        return 0
    if semnum < 0 or semnum >= nsems:
        return -E.EINVAL
    if cmd == GETVAL:
        return sma.vals[semnum]
    if cmd == GETPID:
        return sma.pids[semnum]
    return sma.count(semnum, zero=cmd == GETZCNT)
