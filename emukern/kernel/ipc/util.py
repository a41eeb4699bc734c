"""ipc/util.c and ipc/namespace.c: the per-namespace tables of SysV IPC objects, the key to id
lookup of the three *get calls (``ipcget``), the permission check (``ipcperms``) and the
``struct ipc64_perm`` every *_STAT call copies out.

emukern has one IPC namespace per machine (``Kernel.ipc_ns``).  Ids follow Linux's
allocation: an index taken cyclically (idr_alloc_cyclic) plus a sequence number bumped each
time the index wraps, ``id = seq * IPCMNI + index``, so a removed id is not handed out again
at once and a stale id fails its lookup (EINVAL) instead of reaching a new object.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.kernel.cred import CAP_IPC_OWNER, CAP_SYS_ADMIN, CAP_SYS_RESOURCE, capable, cred_of
from emukern.kernel.sysctl import SysctlEntry

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

# errno values the rest of the kernel has no use for (asm-generic/errno*.h)
ENOSPC, EFBIG, ENOMSG, EIDRM = 28, 27, 42, 43
ERESTARTNOHAND = 514

# uapi/linux/ipc.h
IPC_PRIVATE = 0
IPC_CREAT, IPC_EXCL, IPC_NOWAIT = 0o1000, 0o2000, 0o4000
IPC_RMID, IPC_SET, IPC_STAT, IPC_INFO = 0, 1, 2, 3
IPCMNI = 32768                 # ids per table; also the multiplier of the sequence number
IPCID_SEQ_MAX = (1 << 31) // IPCMNI
S_IRUGO, S_IWUGO = 0o444, 0o222

IPC64_PERM = struct.Struct("<iIIIIIH2x4x16x")        # 48 bytes: key, uid, gid, cuid, cgid, mode, seq


@dataclass(eq=False)
class KernIpcPerm:
    """``struct kern_ipc_perm``: what every IPC object carries for lookup and access."""

    key: int
    uid: int
    gid: int
    mode: int
    id: int = -1
    seq: int = 0
    cuid: int = 0
    cgid: int = 0
    deleted: bool = False          # IPC_RMID ran: lookups by id fail, waiters see EIDRM

    def pack(self) -> bytes:
        return IPC64_PERM.pack(self.key, self.uid, self.gid, self.cuid, self.cgid,
                               self.mode & 0xFFFF, self.seq & 0xFFFF)


@dataclass(eq=False)
class IpcIds:
    """``struct ipc_ids``: one kind's objects by index, with the cyclic allocator's state."""

    limit: int                      # *_ctlmni: the most objects of this kind at once
    objs: dict[int, Any] = field(default_factory=dict)     # index -> object
    last_idx: int = -1
    seq: int = 0
    # kernel.{msg,sem,shm}_next_id: checkpoint/restore asks for the id the next object gets
    next_id: SysctlEntry | None = None

    def add(self, obj: Any) -> int:
        """ipc_addid: the next free index after the last one handed out, wrapping to 0 (and
        bumping the sequence) at IPCMNI; -ENOSPC when the table is full.  A *_next_id the
        caller wrote wins once: its sequence, and the first free index from its own."""
        if len(self.objs) >= self.limit:
            return -ENOSPC
        entry = self.next_id
        if entry is not None and entry.value >= 0:
            want, entry.value = entry.value, -1
            idx = want % IPCMNI
            while idx in self.objs:
                idx += 1
            if idx >= IPCMNI:
                return -ENOSPC
            perm = obj.perm
            perm.seq = want // IPCMNI
            perm.id = perm.seq * IPCMNI + idx
            self.objs[idx] = obj
            return perm.id
        idx = self.last_idx + 1
        for _ in range(IPCMNI):
            if idx >= IPCMNI:
                idx = 0
            if idx not in self.objs:
                break
            idx += 1
        if idx <= self.last_idx:
            self.seq = (self.seq + 1) % IPCID_SEQ_MAX
        self.last_idx = idx
        perm = obj.perm
        perm.seq = self.seq
        perm.id = self.seq * IPCMNI + idx
        self.objs[idx] = obj
        return perm.id

    def find_key(self, key: int) -> Any:
        for obj in self.objs.values():
            if obj.perm.key == key and not obj.perm.deleted:
                return obj
        return None

    def obtain(self, ident: int) -> Any:
        """ipc_obtain_object_check: the object an id names, None when the index is free or its
        sequence number says the id belongs to an object that is gone (both EINVAL)."""
        if ident < 0:
            return None
        obj = self.objs.get(ident % IPCMNI)
        if obj is None or obj.perm.id != ident:
            return None
        return obj

    def remove(self, obj: Any) -> None:
        """ipc_rmid: the index is free again; the key no longer finds the object."""
        obj.perm.deleted = True
        self.objs.pop(obj.perm.id % IPCMNI, None)


@dataclass(eq=False)
class IpcNamespace:
    """``struct ipc_namespace``: the three tables and the limits their sysctls set (kernel.shm*,
    kernel.sem, kernel.msg*), with Linux's defaults."""

    shm: IpcIds = field(default_factory=lambda: IpcIds(4096))        # SHMMNI
    sem: IpcIds = field(default_factory=lambda: IpcIds(32000))       # SEMMNI
    msg: IpcIds = field(default_factory=lambda: IpcIds(32000))       # MSGMNI
    shm_ctlmax: int = (1 << 64) - 1 - (1 << 24)                      # SHMMAX
    shm_ctlall: int = (1 << 64) - 1 - (1 << 24)                      # SHMALL (pages)
    shm_tot: int = 0                                                 # pages in segments
    sem_ctls: tuple[int, int, int, int] = (32000, 1024000000, 500, 32000)  # SEMMSL SEMMNS SEMOPM SEMMNI
    used_sems: int = 0
    msg_ctlmax: int = 8192                                           # MSGMAX
    msg_ctlmnb: int = 16384                                          # MSGMNB
    # SEM_UNDO adjustments by thread group: tgid -> {semid: [adj per semaphore]}
    undo: dict[int, dict[int, list[int]]] = field(default_factory=dict)
    # semtimedop/msg deadlines of sleepers, kept across the re-runs of their wait loop
    deadlines: dict[int, int] = field(default_factory=dict)
    # POSIX message queues (ipc/mqueue.c's mqueue mount): name -> queue, bytes charged per uid
    mq: dict[str, Any] = field(default_factory=dict)
    mq_bytes: dict[int, int] = field(default_factory=dict)
    # its limits, /proc/sys/fs/mqueue/* (ipc/mq_sysctl.c), writable by root: read at each mq_open
    mq_sysctls: dict[str, SysctlEntry] = field(default_factory=lambda: mq_sysctl_table())
    # kernel.msg_next_id, sem_next_id, shm_next_id (ipc/ipc_sysctl.c): -1 until written
    id_sysctls: dict[str, SysctlEntry] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for kind in ("msg", "sem", "shm"):
            e = SysctlEntry(f"kernel.{kind}_next_id", -1, kind="int", minimum=-1, maximum=2**31 - 1)
            self.id_sysctls[e.path] = e
            getattr(self, kind).next_id = e


HARD_MSGMAX, HARD_MSGSIZEMAX = 65536, 16 << 20     # what root may ask for, whatever the sysctls say
MIN_MSGMAX, MIN_MSGSIZEMAX = 1, 128


def mq_sysctl_table() -> dict[str, SysctlEntry]:
    """The fs.mqueue sysctls with Linux's defaults and ranges (DFLT_QUEUESMAX, DFLT_MSGMAX/MSG,
    DFLT_MSGSIZEMAX/MSGSIZE)."""
    return {e.path: e for e in (
        SysctlEntry("fs.mqueue.queues_max", 256, kind="int", minimum=0, maximum=2**31 - 1),
        SysctlEntry("fs.mqueue.msg_max", 10, kind="int", minimum=MIN_MSGMAX, maximum=HARD_MSGMAX),
        SysctlEntry("fs.mqueue.msgsize_max", 8192, kind="int", minimum=MIN_MSGSIZEMAX, maximum=HARD_MSGSIZEMAX),
        SysctlEntry("fs.mqueue.msg_default", 10, kind="int", minimum=MIN_MSGMAX, maximum=HARD_MSGMAX),
        SysctlEntry("fs.mqueue.msgsize_default", 8192, kind="int", minimum=MIN_MSGSIZEMAX,
                    maximum=HARD_MSGSIZEMAX))}


def ipc_ns(k: "Kernel") -> IpcNamespace:
    return k.ipc_ns


def new_perm(task: Any, key: int, flg: int) -> KernIpcPerm:
    """The perm of a new object: owner and creator are the caller's effective ids."""
    c = cred_of(task)
    return KernIpcPerm(key=key, uid=c.euid, gid=c.egid, cuid=c.euid, cgid=c.egid, mode=flg & 0o777)


def ipcperms(task: Any, perm: KernIpcPerm, flag: int) -> bool:
    """ipcperms: True when access is *refused*.  The owner's or creator's bits, else the
    group's, else the others'; a task holding CAP_IPC_OWNER passes always."""
    c = cred_of(task)
    if capable(task, CAP_IPC_OWNER):
        return False
    requested = (flag >> 6 | flag >> 3 | flag) & 7
    granted = perm.mode
    if c.euid in (perm.cuid, perm.uid):
        granted >>= 6
    elif perm.cgid in (c.egid, *c.groups) or perm.gid in (c.egid, *c.groups):
        granted >>= 3
    return bool(requested & ~granted & 7)


def ipcget(task: Any, ids: IpcIds, key: int, flg: int, create: Any, more_checks: Any) -> int:
    """ipcget: IPC_PRIVATE always makes a new object; a key finds the existing one (EEXIST
    under IPC_CREAT|IPC_EXCL, EACCES without the permission ``flg`` asks for, then the kind's
    own checks), or makes one under IPC_CREAT, else ENOENT."""
    if key == IPC_PRIVATE:
        return create()
    obj = ids.find_key(key)
    if obj is None:
        return create() if flg & IPC_CREAT else -E.ENOENT
    if flg & IPC_CREAT and flg & IPC_EXCL:
        return -E.EEXIST
    if ipcperms(task, obj.perm, flg):
        return -E.EACCES
    err = more_checks(obj)
    return err if err else obj.perm.id


def may_change(task: Any, perm: KernIpcPerm) -> bool:
    """ipcctl_obtain_check's owner test for IPC_SET/IPC_RMID: the owner, the creator or
    CAP_SYS_ADMIN."""
    c = cred_of(task)
    return c.euid in (perm.uid, perm.cuid) or capable(task, CAP_SYS_ADMIN)


def set_perm(task: Any, perm: KernIpcPerm, uid: int, gid: int, mode: int) -> None:
    """ipc_update_perm: IPC_SET takes the new owner and the low nine mode bits."""
    perm.uid, perm.gid = uid, gid
    perm.mode = perm.mode & ~0o777 | mode & 0o777


def now_seconds(k: "Kernel", cpu: Any) -> int:
    """ktime_get_real_seconds at this CPU's time: the *_atime/_ctime fields."""
    from emukern.kernel.fs.meta import realtime_ns
    return realtime_ns(k, cpu.now) // 10**9


def rerun_wake(k: "Kernel", ns: IpcNamespace, task: Any) -> Any:
    """At the top of a call that may sleep: None for a fresh call (a deadline left by an
    earlier, interrupted call is dropped); for a re-run after a sleep, what woke it (-EIDRM,
    -ETIMEDOUT, or None for a plain wake-up), with the task off the wait queue again."""
    if task.pending is None:
        ns.deadlines.pop(task.tid, None)
        return None
    woke = task.woken_value             # (the scheduler's finish_wait, done here)
    task.woken_value = None
    for wq in task.waitqueues:
        wq.remove(task)
    task.waitqueues = []
    return woke


def ipc_sleep(k: "Kernel", cpu: Any, task: Any, wq: Any, reason: str, deadline: int | None) -> Any:
    """Sleep on ``wq`` until a change wakes the task (or ``deadline``, in cycles, passes); the
    call runs again from the start when it is woken."""
    from emukern.kernel.sysret import BLOCK
    wq.add(task)
    task.waitqueues = [wq]
    if deadline is not None:
        k.sched.add_timer(task, deadline)
    k.sched.block_current(cpu, task, reason)
    return BLOCK
