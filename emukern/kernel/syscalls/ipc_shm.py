"""shmget / shmat / shmdt / shmctl <-> ipc/shm.c (the segments themselves: kernel/ipc/shm.py).

The guest runs as root, so ipcperms passes unless the program changed its credentials.
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.ipc import shm as ipc_shm
from emukern.kernel.ipc import util as ipc_util
from emukern.kernel.ipc.shm import SHM_LOCK, SHM_LOCKED, SHM_REMAP, SHM_RND, SHM_UNLOCK, SHMLBA
from emukern.kernel.ipc.util import IPC_INFO, IPC_RMID, IPC_SET, IPC_STAT, S_IRUGO
from emukern.kernel.mm import mmap as mm_mmap
from emukern.kernel.mm.vma import _charge, _insert
from emukern.machine.memory import PAGE, Mapping, OutOfMemory, page_up

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

_S32 = (1 << 31)


def _int(v: int) -> int:
    """An ``int`` argument: the register's low 32 bits, signed."""
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & _S32 else v


def sys_shmget(k: "Kernel", cpu, task, key, size, shmflg, *a):
    cpu.charge(k.cost.syscall_body)
    ns = ipc_util.ipc_ns(k)
    ipc_shm.shm_gc(k, ns)
    key, flg = _int(key), _int(shmflg)

    def create() -> int:
        perm = ipc_util.new_perm(task, key, flg)
        return ipc_shm.newseg(k, ns, task, perm, size, ipc_util.now_seconds(k, cpu))

    def more_checks(seg) -> int:
        return -E.EINVAL if seg.size < size else 0     # shm_more_checks: too small for the ask

    return ipc_util.ipcget(task, ns.shm, key, flg, create, more_checks)


def sys_shmat(k: "Kernel", cpu, task, shmid, shmaddr, shmflg, *a):
    """do_shmat: the address (0: the kernel picks; unaligned: rounded down under SHM_RND,
    else EINVAL; over an existing mapping: EINVAL unless SHM_REMAP), the segment and the
    access the flags ask for, then a shared mapping of the whole segment."""
    cpu.charge(k.cost.mmap_op)
    ns = ipc_util.ipc_ns(k)
    ipc_shm.shm_gc(k, ns)
    shmid, flg = _int(shmid), _int(shmflg)
    if shmid < 0:
        return -E.EINVAL
    mm = task.mm
    addr = k.arch.untagged_addr(shmaddr)
    if addr:
        if addr & (SHMLBA - 1):
            if not flg & SHM_RND:
                return -E.EINVAL
            addr &= ~(SHMLBA - 1)
            if not addr and flg & SHM_REMAP:
                return -E.EINVAL
    elif flg & SHM_REMAP:
        return -E.EINVAL
    perms, acc = ipc_shm.access_mode(flg)
    seg = ns.shm.obtain(shmid)
    if seg is None:
        return -E.EINVAL
    if ipc_util.ipcperms(task, seg.perm, acc):
        return -E.EACCES
    size = page_up(seg.size)
    if addr:
        if addr + size > k.arch.STACK_TOP:
            return -E.EINVAL if addr + size >= 1 << 64 else -E.ENOMEM
        if not flg & SHM_REMAP and mm.overlaps(addr, size):
            return -E.EINVAL
        mm.unmap(addr, size)                # SHM_REMAP: MAP_FIXED over what was there
        start = addr
    else:
        start = mm_mmap.get_unmapped_area(k, mm, 0, size)
        if start < PAGE:
            return -E.ENOMEM
    try:
        _charge(mm, size, "shmat")
    except OutOfMemory:
        return -E.ENOMEM
    _insert(mm, Mapping(start, size, perms, seg.name, seg.buf, 0))
    seg.atime = ipc_util.now_seconds(k, cpu)
    seg.lpid = task.tgid
    return start


def sys_shmdt(k: "Kernel", cpu, task, shmaddr, *a):
    """ksys_shmdt: the attach that starts exactly at ``shmaddr`` goes, all of it (the pieces
    an munmap or mprotect left of it too); EINVAL when no attach starts there."""
    cpu.charge(k.cost.mmap_op)
    ns = ipc_util.ipc_ns(k)
    addr = k.arch.untagged_addr(shmaddr)
    if addr % PAGE:
        return -E.EINVAL
    mm = task.mm
    m = mm.find(addr)
    segs = {id(s.buf): s for s in ns.shm.objs.values()}
    seg = segs.get(id(m.buf)) if m is not None and m.start == addr and m.offset == 0 else None
    if seg is None:
        return -E.EINVAL
    end = addr + page_up(seg.size)
    for piece in [p for p in mm.mappings if p.buf is seg.buf and addr <= p.start < end]:
        mm.unmap(piece.start, piece.size)
    seg.dtime = ipc_util.now_seconds(k, cpu)
    seg.lpid = task.tgid
    ipc_shm.shm_gc(k, ns)
    return 0


_SHMINFO64 = struct.Struct("<QQQQQ32x")          # shmmax shmmin shmmni shmseg shmall
_SHM_INFO = struct.Struct("<i4xQQQQQ")            # used_ids shm_tot shm_rss shm_swp 0 0


def sys_shmctl(k: "Kernel", cpu, task, shmid, cmd, buf, *a):
    cpu.charge(k.cost.syscall_body)
    ns = ipc_util.ipc_ns(k)
    ipc_shm.shm_gc(k, ns)
    shmid, cmd = _int(shmid), _int(cmd)
    if cmd < 0 or shmid < 0:
        return -E.EINVAL
    if cmd == IPC_INFO:
        task.mm.write(buf, _SHMINFO64.pack(ns.shm_ctlmax, ipc_shm.SHMMIN, ns.shm.limit, 4096, ns.shm_ctlall))
        return max(ns.shm.objs, default=0)
    if cmd == ipc_shm.SHM_INFO:
        rss = sum(s.pages for s in ns.shm.objs.values())
        task.mm.write(buf, _SHM_INFO.pack(len(ns.shm.objs), ns.shm_tot, rss, 0, 0, 0))
        return max(ns.shm.objs, default=0)
    if cmd in (ipc_shm.SHM_STAT, ipc_shm.SHM_STAT_ANY):
        seg = ns.shm.objs.get(shmid)           # an index, not an id
        if seg is None:
            return -E.EINVAL
        if cmd == ipc_shm.SHM_STAT and ipc_util.ipcperms(task, seg.perm, S_IRUGO):
            return -E.EACCES
        task.mm.write(buf, ipc_shm.stat_bytes(k, seg))
        return seg.perm.id
    if cmd == IPC_SET:
        raw = task.mm.read(buf, ipc_shm.SHMID64_DS.size)
    elif cmd not in (IPC_STAT, IPC_RMID, SHM_LOCK, SHM_UNLOCK):
        return -E.EINVAL
    seg = ns.shm.obtain(shmid)
    if seg is None:
        return -E.EINVAL
    if cmd == IPC_STAT:
        if ipc_util.ipcperms(task, seg.perm, S_IRUGO):
            return -E.EACCES
        task.mm.write(buf, ipc_shm.stat_bytes(k, seg))
        return 0
    if not ipc_util.may_change(task, seg.perm):
        return -E.EPERM
    if cmd == IPC_SET:
        _key, uid, gid, _cu, _cg, mode = struct.unpack_from("<iIIIII", raw)
        ipc_util.set_perm(task, seg.perm, uid, gid, mode)
        seg.ctime = ipc_util.now_seconds(k, cpu)
        return 0
    if cmd == IPC_RMID:
        ipc_shm.shm_rmid(k, ns, seg)
        return 0
    # SHM_LOCK / SHM_UNLOCK: every page is resident anyway; only the mode bit shows it
    if cmd == SHM_LOCK:
        seg.perm.mode |= SHM_LOCKED
    else:
        seg.perm.mode &= ~SHM_LOCKED
    return 0

