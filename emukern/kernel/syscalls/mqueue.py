"""mq_open / mq_unlink / mq_timedsend / mq_timedreceive / mq_notify / mq_getsetattr <->
ipc/mqueue.c.

The queues live in the IPC namespace (``Kernel.ipc_ns.mq``) by name, as the files of Linux's
internal mqueue mount do; a descriptor is a file on a queue, which outlives its name until the
last descriptor goes.  Messages come out highest priority first, in arrival order within a
priority.  A full send or an empty receive sleeps (or EAGAIN with O_NONBLOCK) until the other
side makes room, the absolute CLOCK_REALTIME timeout passes (ETIMEDOUT), or a signal comes.
Each queue is charged to its creator's RLIMIT_MSGQUEUE as Linux counts it (EMFILE past it).
mq_notify supports SIGEV_NONE and SIGEV_SIGNAL; SIGEV_THREAD needs a netlink socket, which
emukern has not, so it is EBADF as for a bad socket descriptor.  The notification registered
by a process is not dropped when it closes the descriptor (mqueue_flush_file is not modelled).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.kernel.cred import CAP_SYS_RESOURCE, capable, cred_of
from emukern.kernel.files import File, WaitQueue
from emukern.kernel.fs import namei as fs_namei
from emukern.kernel.fs.meta import realtime_to_cycles
from emukern.kernel.ipc import util as ipc_util
from emukern.kernel.ipc.util import HARD_MSGMAX, HARD_MSGSIZEMAX
from emukern.kernel.resource import rlimit
from emukern.kernel.signal import generate as signal_generate
from emukern.kernel.signal.state import KSigInfo

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

O_ACCMODE, O_WRONLY, O_RDWR, O_CREAT, O_EXCL = 3, 1, 2, 0o100, 0o200
O_NONBLOCK, O_CLOEXEC = 0o4000, 0o2000000
MQ_PRIO_MAX = 32768
ENOSPC = 28
MQ_ATTR = struct.Struct("<qqqq32x")              # flags, maxmsg, msgsize, curmsgs
SIGEV_SIGNAL, SIGEV_NONE, SIGEV_THREAD = 0, 1, 2
SI_MESGQ = -3
EMSGSIZE, EOVERFLOW = 90, 75
_MSG_MSG = _TREE_NODE = 48                        # sizeof(struct msg_msg), posix_msg_tree_node
RLIMIT_MSGQUEUE = 12


@dataclass(eq=False)
class MqQueue:
    """The mqueue inode (``struct mqueue_inode_info``)."""

    maxmsg: int
    msgsize: int
    uid: int
    charged: int
    msgs: list[tuple[int, int, bytes]] = field(default_factory=list)   # (-prio, seq, bytes)
    seq: int = 0
    wq: WaitQueue = field(default_factory=lambda: WaitQueue("mqueue"))
    notify: tuple[int, int, int, int] | None = None      # (owner tgid, kind, signo, value)
    notify_uid: int = 0
    qsize: int = 0
    refs: int = 0
    linked: bool = True


class MqFile(File):
    """An open message queue descriptor."""
    kind = "mqueue"
    stat_mode = 0o100600

    def __init__(self, q: MqQueue, oflag: int) -> None:
        super().__init__()
        self.q = q
        self.readable = (oflag & O_ACCMODE) in (0, O_RDWR)
        self.writable = (oflag & O_ACCMODE) in (O_WRONLY, O_RDWR)
        self.nonblock = bool(oflag & O_NONBLOCK)
        self.pos = 0
        q.refs += 1

    def poll(self) -> int:
        q = self.q
        return (0x41 if q.msgs else 0) | (0x104 if len(q.msgs) < q.maxmsg else 0)

    def poll_queues(self) -> list[WaitQueue]:
        return [self.q.wq]

    def kernel_read(self, k: Any, cpu: Any, task: Any, buf: int, count: int) -> Any:
        """mqueue_read_file: the queue's state as a line of text."""
        q = self.q
        kind, signo, pid = (q.notify[1], q.notify[2], q.notify[0]) if q.notify else (0, 0, 0)
        text = (f"QSIZE:{q.qsize:<10} NOTIFY:{kind:<5} SIGNO:{signo:<5} NOTIFY_PID:{pid:<6}\n").encode()
        out = text[self.pos: self.pos + count]
        task.mm.write(buf, out)
        self.pos += len(out)
        return len(out)

    def on_close(self) -> list[WaitQueue]:
        self.q.refs -= 1
        return [self.q.wq]


def _ns(k: "Kernel") -> ipc_util.IpcNamespace:
    return k.ipc_ns


def _name(k: "Kernel", task, ptr: int) -> str | int:
    """getname, then lookup_one_len's rules for a name in the mqueue mount's root."""
    name = fs_namei._user_path(k, task, ptr)
    if isinstance(name, int):
        return name
    if not name:
        return -E.ENOENT
    if name in (".", "..") or "/" in name:
        return -E.EACCES
    if len(name.encode("utf-8", "surrogateescape")) > 255:
        return -36                        # ENAMETOOLONG
    return name


def _release(ns: ipc_util.IpcNamespace, q: MqQueue) -> None:
    ns.mq_bytes[q.uid] = ns.mq_bytes.get(q.uid, 0) - q.charged


def sys_mq_open(k: "Kernel", cpu, task, uname, oflag, mode, uattr, *a):
    cpu.charge(k.cost.syscall_body)
    ns = _ns(k)
    oflag &= 0xFFFFFFFF
    attr = MQ_ATTR.unpack(task.mm.read(uattr, MQ_ATTR.size)) if uattr else None
    name = _name(k, task, uname)
    if isinstance(name, int):
        return name
    q = ns.mq.get(name)
    if q is None:
        if not oflag & O_CREAT:
            return -E.ENOENT
        lim = {key.rpartition(".")[2]: e.value for key, e in ns.mq_sysctls.items()}
        c = cred_of(task)
        if attr:
            maxmsg, msgsize = attr[1], attr[2]
            if maxmsg <= 0 or msgsize <= 0:
                return -E.EINVAL
            if capable(task, CAP_SYS_RESOURCE):     # the hard limits only
                if maxmsg > HARD_MSGMAX or msgsize > HARD_MSGSIZEMAX:
                    return -E.EINVAL
            elif maxmsg > lim["msg_max"] or msgsize > lim["msgsize_max"]:
                return -E.EINVAL
        else:
            # no attributes: the defaults, never above the maximums
            maxmsg = min(lim["msg_default"], lim["msg_max"])
            msgsize = min(lim["msgsize_default"], lim["msgsize_max"])
        if len(ns.mq) >= lim["queues_max"] and not capable(task, CAP_SYS_RESOURCE):
            return -ENOSPC
        if msgsize > ((1 << 64) - 1) // maxmsg:
            return -EOVERFLOW
        charged = maxmsg * _MSG_MSG + min(maxmsg, MQ_PRIO_MAX) * _TREE_NODE + maxmsg * msgsize
        used = ns.mq_bytes.get(c.euid, 0)
        if used + charged > rlimit(k, task, RLIMIT_MSGQUEUE):
            return -E.EMFILE
        q = MqQueue(maxmsg, msgsize, c.euid, charged)
        f = MqFile(q, oflag)
        fd = task.files.install(f, cloexec=True)
        if fd < 0:
            q.refs -= 1
            return fd
        ns.mq[name] = q
        ns.mq_bytes[c.euid] = used + charged
        return fd
    if oflag & (O_CREAT | O_EXCL) == O_CREAT | O_EXCL:
        return -E.EEXIST
    if oflag & O_ACCMODE == O_ACCMODE:
        return -E.EINVAL
    return task.files.install(MqFile(q, oflag), cloexec=True)


def sys_mq_unlink(k: "Kernel", cpu, task, uname, *a):
    cpu.charge(k.cost.syscall_body)
    ns = _ns(k)
    name = _name(k, task, uname)
    if isinstance(name, int):
        return name
    q = ns.mq.pop(name, None)
    if q is None:
        return -E.ENOENT
    q.linked = False
    _release(ns, q)          # (Linux uncharges at the inode's eviction; the name is what counts here)
    return 0


def _mq_file(task, fd) -> MqFile | int:
    v = fd & 0xFFFFFFFF
    f = task.files.get(v - (1 << 32) if v >> 31 else v)
    return f if isinstance(f, MqFile) else -E.EBADF


def _deadline(k: "Kernel", task, ns: ipc_util.IpcNamespace, uts: int) -> int | None | Any:
    """prepare_timeout: an absolute CLOCK_REALTIME time (EINVAL when not a valid timespec),
    as cycles; kept across the re-runs of one call."""
    if not uts:
        return None
    got = ns.deadlines.get(task.tid)
    if got is not None:
        return got
    ts = task.mm.read(uts, 16)
    sec = int.from_bytes(ts[:8], "little", signed=True)
    nsec = int.from_bytes(ts[8:], "little", signed=True)
    if sec < 0 or not 0 <= nsec < 10**9:
        return -E.EINVAL
    return realtime_to_cycles(k, sec * 10**9 + nsec)


def _wait(k: "Kernel", cpu, task, ns, q: MqQueue, deadline: int | None, woke: Any, reason: str) -> Any:
    if deadline is not None and (woke == -E.ETIMEDOUT or cpu.now >= deadline):
        ns.deadlines.pop(task.tid, None)
        return -E.ETIMEDOUT
    if deadline is not None:
        ns.deadlines[task.tid] = deadline
    return ipc_util.ipc_sleep(k, cpu, task, q.wq, reason, deadline)


def sys_mq_timedsend(k: "Kernel", cpu, task, mqdes, uptr, msg_len, msg_prio, uts, *a):
    cpu.charge(k.cost.syscall_body)
    ns = _ns(k)
    woke = ipc_util.rerun_wake(k, ns, task)
    deadline = _deadline(k, task, ns, uts)
    if isinstance(deadline, int) and deadline < 0:
        return deadline
    if msg_prio & 0xFFFFFFFF >= MQ_PRIO_MAX:
        return -E.EINVAL
    f = _mq_file(task, mqdes)
    if isinstance(f, int) or not f.writable:
        return -E.EBADF
    q = f.q
    if msg_len > q.msgsize:
        return -EMSGSIZE
    data = task.mm.read(uptr, msg_len)
    if len(q.msgs) >= q.maxmsg:
        if f.nonblock:
            return -E.EAGAIN
        return _wait(k, cpu, task, ns, q, deadline, woke, "mq_timedsend")
    ns.deadlines.pop(task.tid, None)
    q.seq += 1
    q.msgs.append((-(msg_prio & 0xFFFFFFFF), q.seq, data))
    q.msgs.sort()
    q.qsize += len(data)
    receivers = [t for t in q.wq.waiters if t.wait_reason == "mq_timedreceive"]
    if len(q.msgs) == 1 and not receivers and q.notify is not None:
        _do_notify(k, cpu, task, q)
    k.sched.wake_queue(q.wq, cpu.now)
    return 0


def _do_notify(k: "Kernel", cpu, task, q: MqQueue) -> None:
    """__do_notify: the registered process hears of a message in an empty queue once (the
    registration goes), by a signal carrying SI_MESGQ, the sender's pid and the sigval."""
    assert q.notify is not None
    owner, kind, signo, value = q.notify
    q.notify = None
    if kind != SIGEV_SIGNAL or not signo:
        return
    target = k.tasks.get(owner)
    if target is None or not target.alive:
        return
    info = KSigInfo(signo=signo, code=SI_MESGQ, pid=task.tgid, uid=cred_of(task).uid, value=value)
    signal_generate.send_signal(k, cpu, target, info, group=True)


def sys_mq_timedreceive(k: "Kernel", cpu, task, mqdes, uptr, msg_len, uprio, uts, *a):
    cpu.charge(k.cost.syscall_body)
    ns = _ns(k)
    woke = ipc_util.rerun_wake(k, ns, task)
    deadline = _deadline(k, task, ns, uts)
    if isinstance(deadline, int) and deadline < 0:
        return deadline
    f = _mq_file(task, mqdes)
    if isinstance(f, int) or not f.readable:
        return -E.EBADF
    q = f.q
    if msg_len < q.msgsize:
        return -EMSGSIZE
    if not q.msgs:
        if f.nonblock:
            return -E.EAGAIN
        return _wait(k, cpu, task, ns, q, deadline, woke, "mq_timedreceive")
    ns.deadlines.pop(task.tid, None)
    negprio, _seq, data = q.msgs.pop(0)
    q.qsize -= len(data)
    k.sched.wake_queue(q.wq, cpu.now)             # senders: there is room now
    task.mm.write(uptr, data)
    if uprio:
        task.mm.write_u32(uprio, -negprio)
    return len(data)


def sys_mq_notify(k: "Kernel", cpu, task, mqdes, usev, *a):
    cpu.charge(k.cost.syscall_body)
    sev = None
    if usev:
        raw = task.mm.read(usev, 16)
        value, signo, notify = struct.unpack("<qii", raw)
        if notify not in (SIGEV_NONE, SIGEV_SIGNAL, SIGEV_THREAD):
            return -E.EINVAL
        if notify == SIGEV_SIGNAL and not 0 <= signo <= 64:
            return -E.EINVAL
        if notify == SIGEV_THREAD:
            return -E.EBADF               # its netlink socket: emukern has none
        sev = (notify, signo, value)
    f = _mq_file(task, mqdes)
    if isinstance(f, int):
        return f
    q = f.q
    if sev is None:
        if q.notify is not None and q.notify[0] == task.tgid:
            q.notify = None
        return 0
    if q.notify is not None:
        return -E.EBUSY
    q.notify = (task.tgid, sev[0], sev[1], sev[2])
    return 0


def sys_mq_getsetattr(k: "Kernel", cpu, task, mqdes, unew, uold, *a):
    cpu.charge(k.cost.syscall_body)
    new = MQ_ATTR.unpack(task.mm.read(unew, MQ_ATTR.size)) if unew else None
    if new is not None and new[0] & ~O_NONBLOCK:
        return -E.EINVAL
    f = _mq_file(task, mqdes)
    if isinstance(f, int):
        return f
    q = f.q
    if uold:
        task.mm.write(uold, MQ_ATTR.pack(O_NONBLOCK if f.nonblock else 0, q.maxmsg, q.msgsize, len(q.msgs)))
    if new is not None:
        f.nonblock = bool(new[0] & O_NONBLOCK)
    return 0
