"""msgget / msgsnd / msgrcv / msgctl <-> ipc/msg.c (the queues: kernel/ipc/msg.py).

A sender that does not fit and a receiver that finds nothing sleep on the queue and run
again from the start when woken; removal wakes them with EIDRM.  The checks come in Linux's
order (do_msgsnd, do_msgrcv); a message is taken off the queue before it is copied out, so a
bad buffer loses it, as in Linux.
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.ipc import msg as ipc_msg
from emukern.kernel.ipc import util as ipc_util
from emukern.kernel.ipc.msg import MSG_COPY, MSG_EXCEPT, MSG_NOERROR, MSQID64_DS, MsgQueue
from emukern.kernel.ipc.util import EIDRM, ENOMSG, IPC_INFO, IPC_NOWAIT, IPC_RMID, IPC_SET, IPC_STAT, S_IRUGO, S_IWUGO
from emukern.kernel.syscalls.ipc_shm import _int
from emukern.kernel.sysret import s64

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

_MSGINFO = struct.Struct("<iiiiiiiH2x")       # struct msginfo (32 bytes)


def sys_msgget(k: "Kernel", cpu, task, key, msgflg, *a):
    cpu.charge(k.cost.syscall_body)
    ns = ipc_util.ipc_ns(k)
    key, flg = _int(key), _int(msgflg)

    def create() -> int:
        perm = ipc_util.new_perm(task, key, flg)
        return ns.msg.add(MsgQueue(perm, ns.msg_ctlmnb, ctime=ipc_util.now_seconds(k, cpu)))

    return ipc_util.ipcget(task, ns.msg, key, flg, create, lambda q: 0)


def sys_msgsnd(k: "Kernel", cpu, task, msqid, msgp, msgsz, msgflg, *a):
    cpu.charge(k.cost.syscall_body)
    ns = ipc_util.ipc_ns(k)
    if ipc_util.rerun_wake(k, ns, task) == -EIDRM:
        return -EIDRM
    msqid, flg, size = _int(msqid), _int(msgflg), s64(msgsz)
    mtype = s64(task.mm.read_u64(msgp))
    if msgsz > ns.msg_ctlmax or size < 0 or msqid < 0:
        return -E.EINVAL
    if mtype < 1:
        return -E.EINVAL
    text = task.mm.read(msgp + 8, size)
    q = ns.msg.obtain(msqid)
    if q is None:
        return -E.EINVAL
    if ipc_util.ipcperms(task, q.perm, S_IWUGO):
        return -E.EACCES
    if not q.fits(size):
        if flg & IPC_NOWAIT:
            return -E.EAGAIN
        return ipc_util.ipc_sleep(k, cpu, task, q.wq, "msgsnd", None)
    q.msgs.append((mtype, text))
    q.cbytes += size
    q.lspid = task.tgid
    q.stime = ipc_util.now_seconds(k, cpu)
    k.sched.wake_queue(q.wq, cpu.now)           # receivers look again
    return 0


def sys_msgrcv(k: "Kernel", cpu, task, msqid, msgp, msgsz, msgtyp, msgflg, *a):
    cpu.charge(k.cost.syscall_body)
    ns = ipc_util.ipc_ns(k)
    if ipc_util.rerun_wake(k, ns, task) == -EIDRM:
        return -EIDRM
    msqid, flg, bufsz, msgtyp = _int(msqid), _int(msgflg), s64(msgsz), s64(msgtyp)
    if msqid < 0 or bufsz < 0:
        return -E.EINVAL
    if flg & MSG_COPY and (flg & MSG_EXCEPT or not flg & IPC_NOWAIT):
        return -E.EINVAL
    q = ns.msg.obtain(msqid)
    if q is None:
        return -E.EINVAL
    if ipc_util.ipcperms(task, q.perm, S_IRUGO):
        return -E.EACCES
    i = q.find(msgtyp, flg)
    if i < 0:
        if flg & IPC_NOWAIT:
            return -ENOMSG
        return ipc_util.ipc_sleep(k, cpu, task, q.wq, "msgrcv", None)
    mtype, text = q.msgs[i]
    if bufsz < len(text) and not flg & MSG_NOERROR:
        return -E.E2BIG
    if not flg & MSG_COPY:
        del q.msgs[i]
        q.cbytes -= len(text)
        q.lrpid = task.tgid
        q.rtime = ipc_util.now_seconds(k, cpu)
        k.sched.wake_queue(q.wq, cpu.now)       # senders may fit now
    n = min(bufsz, len(text))
    task.mm.write(msgp, (mtype & (1 << 64) - 1).to_bytes(8, "little") + text[:n])
    return n


def sys_msgctl(k: "Kernel", cpu, task, msqid, cmd, buf, *a):
    cpu.charge(k.cost.syscall_body)
    ns = ipc_util.ipc_ns(k)
    msqid, cmd = _int(msqid), _int(cmd)
    mm = task.mm
    if msqid < 0 or cmd < 0:
        return -E.EINVAL
    if cmd in (IPC_INFO, ipc_msg.MSG_INFO):
        if cmd == IPC_INFO:
            info = (0, 0, ns.msg_ctlmax, ns.msg_ctlmnb, ns.msg.limit, 8192 * 4, 16384, 0xFFFF)
        else:
            info = (len(ns.msg.objs), 0, ns.msg_ctlmax, ns.msg_ctlmnb, ns.msg.limit,
                    sum(len(q.msgs) for q in ns.msg.objs.values()),
                    sum(q.cbytes for q in ns.msg.objs.values()), 0xFFFF)
        mm.write(buf, _MSGINFO.pack(*info))
        return max(ns.msg.objs, default=0)
    if cmd in (ipc_msg.MSG_STAT, ipc_msg.MSG_STAT_ANY):
        q = ns.msg.objs.get(msqid)
        if q is None:
            return -E.EINVAL
        if cmd == ipc_msg.MSG_STAT and ipc_util.ipcperms(task, q.perm, S_IRUGO):
            return -E.EACCES
        mm.write(buf, q.stat_bytes())
        return q.perm.id
    if cmd == IPC_SET:
        raw = mm.read(buf, MSQID64_DS.size)
    elif cmd not in (IPC_STAT, IPC_RMID):
        return -E.EINVAL
    q = ns.msg.obtain(msqid)
    if q is None:
        return -E.EINVAL
    if cmd == IPC_STAT:
        if ipc_util.ipcperms(task, q.perm, S_IRUGO):
            return -E.EACCES
        mm.write(buf, q.stat_bytes())
        return 0
    if not ipc_util.may_change(task, q.perm):
        return -E.EPERM
    if cmd == IPC_RMID:
        ns.msg.remove(q)
        k.sched.wake_queue(q.wq, cpu.now, value=-EIDRM)
        return 0
    _key, uid, gid, _cu, _cg, mode = struct.unpack_from("<iIIIII", raw)
    qbytes = struct.unpack_from("<Q", raw, 88)[0]
    if qbytes > ns.msg_ctlmnb and not ipc_util.capable(task, ipc_util.CAP_SYS_RESOURCE):
        return -E.EPERM                          # raising it past MSGMNB needs CAP_SYS_RESOURCE
    ipc_util.set_perm(task, q.perm, uid, gid, mode)
    q.qbytes = qbytes
    q.ctime = ipc_util.now_seconds(k, cpu)
    k.sched.wake_queue(q.wq, cpu.now)
    return 0
