"""ipc/shm.c: System V shared memory segments.

A segment's bytes are one host buffer, made at shmget and charged to the machine's memory
pool (--mem-limit) as shmem pages are at creation.  shmat puts a window on that buffer into
the caller's mm as a MAP_SHARED mapping (its name starts with ``shared:``, as shared anonymous
memory's does), so the machine's fork already hands the same buffer to the child — dup_mmap's
inheritance of attaches — and a store in one process is seen by every other.  The window is
charged like any other mapping of the mm, so the pool counts a segment once for its pages and
once per attach.

``shm_nattch`` is not a counter kept in step with every mm change here: it is counted when
asked, as the number of vmas over the segment's buffer in the live address spaces (fork,
munmap, exec and exit change it without telling this module).  A segment marked SHM_DEST by
IPC_RMID is destroyed once that count is zero, looked at on every shm call and at exit.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.kernel.ipc.util import (
    ENOSPC,
    IpcNamespace,
    KernIpcPerm,
    S_IRUGO,
    S_IWUGO,
)
from emukern.machine.memory import PAGE, OutOfMemory, _host_buffer, page_up

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

SHMMIN = 1
SHM_DEST, SHM_LOCKED = 0o1000, 0o2000          # perm.mode bits
SHM_RDONLY, SHM_RND, SHM_REMAP, SHM_EXEC = 0o10000, 0o20000, 0o40000, 0o100000
SHM_LOCK, SHM_UNLOCK = 11, 12
SHM_STAT, SHM_INFO, SHM_STAT_ANY = 13, 14, 15
SHMLBA = PAGE                      # arm64 (for native tasks) and riscv: asm-generic's
SHMID64_DS = struct.Struct("<48sQqqqiiQ8x8x")   # 112 bytes


@dataclass(eq=False)
class ShmSegment:
    """``struct shmid_kernel``."""

    perm: KernIpcPerm
    size: int                       # shm_segsz as asked (the mapping is page-rounded)
    buf: Any                        # the host buffer behind every attach
    cpid: int
    ctime: int
    lpid: int = 0
    atime: int = 0
    dtime: int = 0
    pages: int = 0

    @property
    def name(self) -> str:
        """How /proc/PID/maps shows an attach: the shmem file's name, unlinked."""
        return f"shared:/SYSV{self.perm.key & 0xFFFFFFFF:08x} (deleted)"


def _live_mms(k: "Kernel") -> list[Any]:
    seen: dict[int, Any] = {}
    for t in k.live_tasks():
        mm = t.mm
        if mm is not None and mm.users > 0:
            seen[id(mm)] = mm
    return list(seen.values())


def attaches(k: "Kernel", seg: ShmSegment) -> int:
    """shm_nattch: the vmas over the segment in every live mm (a mapping split by emukern
    where Linux keeps one vma counts once)."""
    n = 0
    for mm in _live_mms(k):
        prev = None
        for m in mm.mappings:
            if m.buf is seg.buf:
                if not (prev is not None and prev.end == m.start and prev.buf is m.buf
                        and prev.perms == m.perms and prev.offset + prev.size == m.offset):
                    n += 1
                prev = m
            else:
                prev = None
    return n


def newseg(k: "Kernel", ns: IpcNamespace, task: Any, perm: KernIpcPerm, size: int, now: int) -> int:
    """newseg: the size limits (EINVAL below SHMMIN or above SHMMAX, ENOSPC past SHMALL), a
    size the memory cannot back (ENOMEM, as shmem's accounting refuses it), then the id."""
    if size < SHMMIN or size > ns.shm_ctlmax:
        return -E.EINVAL
    pages = page_up(size) // PAGE if size < (1 << 64) - PAGE else 1 << 52
    if ns.shm_tot + pages > ns.shm_ctlall:
        return -ENOSPC
    if len(ns.shm.objs) >= ns.shm.limit:
        return -ENOSPC
    if size >= 1 << 63:
        return -E.EINVAL            # shmem_file_setup: beyond MAX_LFS_FILESIZE
    pool = k.mem
    if size > (1 << 40) or (pool.limit is not None and page_up(size) > pool.limit - pool.used):
        return -E.ENOMEM
    try:
        pool.charge(page_up(size), "shmget")
    except OutOfMemory:
        return -E.ENOMEM
    try:
        buf = _host_buffer(page_up(size), "shmget")
    except OutOfMemory:
        pool.uncharge(page_up(size))
        return -E.ENOMEM
    seg = ShmSegment(perm, size, buf, cpid=task.tgid, ctime=now, pages=pages)
    ident = ns.shm.add(seg)
    if ident < 0:
        pool.uncharge(page_up(size))
        return ident
    ns.shm_tot += pages
    return ident


def shm_destroy(k: "Kernel", ns: IpcNamespace, seg: ShmSegment) -> None:
    """The segment's pages go back to the pool; the id is free."""
    ns.shm.remove(seg)
    ns.shm_tot -= seg.pages
    k.mem.uncharge(page_up(seg.size))


def shm_gc(k: "Kernel", ns: IpcNamespace) -> None:
    """Destroy every SHM_DEST segment nobody has attached any more (shm_close's last close)."""
    for seg in [s for s in ns.shm.objs.values() if s.perm.mode & SHM_DEST]:
        if attaches(k, seg) == 0:
            shm_destroy(k, ns, seg)


def shm_rmid(k: "Kernel", ns: IpcNamespace, seg: ShmSegment) -> None:
    """do_shm_rmid: destroyed now when unattached; otherwise marked SHM_DEST and its key
    forgotten (a shmget by key no longer finds it), while its id keeps working for the
    attached processes until the last detach."""
    seg.perm.mode |= SHM_DEST
    seg.perm.key = 0
    if attaches(k, seg) == 0:
        shm_destroy(k, ns, seg)


def stat_bytes(k: "Kernel", seg: ShmSegment) -> bytes:
    return SHMID64_DS.pack(seg.perm.pack(), seg.size, seg.atime, seg.dtime, seg.ctime,
                           seg.cpid, seg.lpid, attaches(k, seg))


def access_mode(shmflg: int) -> tuple[str, int]:
    """The mapping's permissions and the access ipcperms checks, from shmat's flags."""
    if shmflg & SHM_RDONLY:
        perms, acc = "r-", S_IRUGO
    else:
        perms, acc = "rw", S_IRUGO | S_IWUGO
    if shmflg & SHM_EXEC:
        return perms + "x", acc | 0o111
    return perms + "-", acc
