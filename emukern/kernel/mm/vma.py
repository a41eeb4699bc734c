"""VMAs as the memory syscalls see them (mm/mremap.c, mm/mlock.c, mm/msync.c, mm/memfd.c): the
runs of emukern mappings Linux would hold as one vma, the locked ranges, the memfd file, and the
uapi numbers of mremap, the mlock family, msync, membarrier and memfd_create.  The syscalls
themselves are kernel/syscalls/{mremap,mlock,msync,madvise,membarrier,memfd}.py.

An emukern mapping (machine/memory.py ``Mapping``) is a window on a host buffer; Linux's vma is
what a run of adjacent mappings with the same permissions and name forms (emukern splits its
mappings where Linux keeps one vma, e.g. after a grow in place), so the "does the range fit in
one vma" rules of mremap are asked of such a run (:func:`vma_end`).

The guest runs as root (getuid() == 0), so it has CAP_IPC_LOCK: like Linux's can_do_mlock and
mlock_future_ok for a capable task, RLIMIT_MEMLOCK never refuses a lock here.  Locked ranges
are kept per mm with the pages they lock (not inherited by fork, as Linux's VM_LOCKED is cleared
in the child): msync's EBUSY, /proc/PID/smaps's Locked and VmFlags, and the maps lines split at
their edges read them (see "VM_LOCKED / VM_LOCKONFAULT" below).
"""
from __future__ import annotations

import mmap
import os
import itertools
import weakref
from typing import Any

from emukern.errors import MemoryFault
from emukern.kernel import errno as E
from emukern.kernel.files import host_fd_admit
from emukern.machine.memory import (PAGE, Mapping, OutOfMemory, _host_buffer, is_shared, is_uncharged, page_up,
                                   populate)
from emukern.kernel.fs.file import MAX_IO, HostFile, file_view
from emukern.kernel.fs.vfs import Node
from emukern.machine.memory import AS_LIMIT


MREMAP_MAYMOVE, MREMAP_FIXED, MREMAP_DONTUNMAP = 1, 2, 4
MS_ASYNC, MS_INVALIDATE, MS_SYNC = 1, 2, 4
MCL_CURRENT, MCL_FUTURE, MCL_ONFAULT = 1, 2, 4
MLOCK_ONFAULT = 1
# kernel/sched/membarrier.c commands
MB_QUERY, MB_GLOBAL, MB_GLOBAL_EXP, MB_REG_GLOBAL_EXP = 0, 1, 2, 4
MB_PRIV_EXP, MB_REG_PRIV_EXP = 8, 16
MB_PRIV_EXP_SYNC_CORE, MB_REG_PRIV_EXP_SYNC_CORE = 32, 64
MB_PRIV_EXP_RSEQ, MB_REG_PRIV_EXP_RSEQ = 128, 256
MB_GET_REGISTRATIONS = 512
MEMBARRIER_CMD_FLAG_CPU = 1
_U64 = (1 << 64) - 1


def _same_vma(a: Mapping, b: Mapping) -> bool:
    """Would Linux have one vma where emukern has the adjacent mappings a and b?  Yes when they
    are split parts of one mapping (mprotect to the same permissions, munmap around them): the
    same buffer, contiguous.  Separately created anonymous mappings may merge in Linux too, but
    not when their anon_vmas differ (pages were touched in both): emukern never merges."""
    return (a.end == b.start and a.perms == b.perms and a.name == b.name and a.buf is b.buf
            and a.offset + a.size == b.offset)


def vma_end(mm: Any, addr: int) -> int | None:
    """The end of the vma holding addr (None when addr is unmapped): vma_lookup's vm_end."""
    m = mm.find(addr)
    if m is None:
        return None
    i = mm.mappings.index(m)
    while i + 1 < len(mm.mappings) and _same_vma(mm.mappings[i], mm.mappings[i + 1]):
        i += 1
    return mm.mappings[i].end


def _pieces(mm: Any, start: int, end: int) -> list[tuple[Mapping, int, int]]:
    """(mapping, lo, hi) for the parts of [start, end) that are mapped, in address order."""
    return [(m, max(m.start, start), min(m.end, end)) for m in mm.mappings
            if m.start < end and start < m.end]


def _fully_mapped(mm: Any, start: int, end: int) -> bool:
    cur = start
    for _m, lo, hi in _pieces(mm, start, end):
        if lo != cur:
            return False
        cur = hi
    return cur >= end


def _insert(mm: Any, m: Mapping) -> None:
    """Add a mapping built here (its bytes already charged) and tell the CPUs."""
    mm.mappings.append(m)
    mm.mappings.sort(key=lambda x: x.start)
    mm._changed()
    mm.version += 1
    if "x" in m.perms:
        mm.code_gen += 1          # code appeared where the CPUs' scans did not look


def _charge(mm: Any, size: int, what: str, buf: Any = None) -> None:
    """Count ``size`` more mapped bytes (of ``buf``: a file's pages are not charged to the
    machine's memory pool, see machine/memory.py's set_uncharged)."""
    if mm.mapped + size > AS_LIMIT:
        raise OutOfMemory(f"{what}: address-space limit")
    if mm.pool is not None and (buf is None or not is_uncharged(buf)):
        mm.pool.charge(size, what)
    mm.mapped += size


def file_page_past_eof(mm: Any, addr: int, access: str | None) -> bool:
    """A fault at ``addr`` that the mapping allows, in a page of a root file's shared mapping
    wholly past the file's end: filemap_fault's VM_FAULT_SIGBUS (kernel/fs/file.py maps those
    pages with no access in the CPUs)."""
    m = mm.find(addr)
    if m is None or not is_shared(m) or (access is not None and access not in m.perms):
        return False
    view = file_view(m.buf)
    return view is not None and view.past_eof(m.offset + addr - m.start)


def _locked(mm: Any) -> list[list[int]]:
    """The mm's locked address ranges, sorted and merged (what VM_LOCKED covers)."""
    _lock_sync(mm)
    got = mm.__dict__.get("_mlocked")
    if got is None:
        got = mm.__dict__["_mlocked"] = []
    return got


# ---- VM_LOCKED / VM_LOCKONFAULT ----------------------------------------------------------------
# Linux keeps the lock flags on the vma, so they go with its pages: munmap drops them, a new
# mapping at the same address starts unlocked, mremap carries them along.  emukern's mappings
# are split and replaced freely, so each locked range is recorded with the host buffer and the
# offset in it that backed it when it was locked (a lock record); a record whose pages are no
# longer mapped there is dropped the next time the locks are read.  ``_mlocked`` is the merged
# address view of the records (what msync and mremap ask).
VM_LOCKED, VM_LOCKONFAULT = 1, 2


def _lock_records(mm: Any) -> list[list[Any]]:
    """[lo, hi, weakref to the buffer, offset of lo in it, flags] per locked piece."""
    got = mm.__dict__.get("_mlock_recs")
    if got is None:
        got = mm.__dict__["_mlock_recs"] = []
    return got


def _lock_publish(mm: Any, recs: list[list[Any]]) -> None:
    recs.sort(key=lambda r: r[0])
    mm.__dict__["_mlock_recs"] = recs
    merged: list[list[int]] = []
    for r in recs:
        if merged and merged[-1][1] >= r[0]:
            merged[-1][1] = max(merged[-1][1], r[1])
        else:
            merged.append([r[0], r[1]])
    mm.__dict__["_mlocked"] = merged
    mm.__dict__["_mlock_version"] = mm.version


def _lock_sync(mm: Any) -> None:
    """Bring the lock records up to date with the mappings: drop what was unmapped or replaced,
    and lock the mappings made since mlockall(MCL_FUTURE) (mm->def_flags) as Linux's mmap
    would have, faulting them in unless MCL_ONFAULT was given."""
    d = mm.__dict__
    future = d.get("_mlock_future")
    if d.get("_mlock_version") == mm.version and not future:
        return
    recs: list[list[Any]] = []
    for lo, hi, ref, off, flags in d.get("_mlock_recs") or ():
        buf = ref()
        for m, plo, phi in _pieces(mm, lo, hi):
            if m.buf is buf and m.offset + plo - m.start == off + plo - lo:
                recs.append([plo, phi, ref, off + plo - lo, flags])
    if future:
        seen = d["_mlock_seen"]
        for m in mm.mappings:
            if m.buf not in seen:
                seen.add(m.buf)
                recs.append([m.start, m.end, weakref.ref(m.buf), m.offset, future])
                if not future & VM_LOCKONFAULT:
                    lock_populate(m, m.start, m.end)
    _lock_publish(mm, recs)


def lock_sync(mm: Any) -> None:
    """Settle the lock flags before residency is read: the mappings made since
    mlockall(MCL_FUTURE) are locked, and faulted in, when anything looks (see _lock_sync)."""
    _lock_sync(mm)


def lock_populate(m: Mapping, lo: int, hi: int) -> None:
    """populate_vma_page_range for a lock: a private writable mapping is faulted in for write
    (its pages become its own), any other accessible one for read; PROT_NONE is left alone."""
    if m.perms.startswith("---"):
        return
    populate(m, lo, hi, "w" in m.perms and not is_shared(m))


def _lock_ranges(mm: Any, start: int, end: int, lock: bool, flags: int = VM_LOCKED) -> None:
    """Lock [start, end) with ``flags`` (or unlock it): the records are cut at its edges and
    the mapped parts inside get one record each."""
    _lock_sync(mm)
    recs: list[list[Any]] = []
    for r in _lock_records(mm):
        lo, hi, ref, off, fl = r
        if hi <= start or lo >= end:
            recs.append(r)
            continue
        if lo < start:
            recs.append([lo, start, ref, off, fl])
        if hi > end:
            recs.append([end, hi, ref, off + end - lo, fl])
    if lock:
        for m, lo, hi in _pieces(mm, start, end):
            recs.append([lo, hi, weakref.ref(m.buf), m.offset + lo - m.start, flags | VM_LOCKED])
    _lock_publish(mm, recs)


def lock_unlock_all(mm: Any) -> None:
    """munlockall: no vma stays locked and mm->def_flags loses its lock bits."""
    d = mm.__dict__
    d["_mlock_future"] = 0
    d.pop("_mlock_seen", None)
    _lock_publish(mm, [])


def lock_future(mm: Any, flags: int) -> None:
    """mlockall's mm->def_flags: the mappings made from now on are locked with ``flags`` (0:
    none are).  The mappings there now count as seen."""
    d = mm.__dict__
    _lock_sync(mm)
    d["_mlock_future"] = flags
    if flags:
        d["_mlock_seen"] = weakref.WeakSet(m.buf for m in mm.mappings)
    else:
        d.pop("_mlock_seen", None)


def lock_segments(mm: Any, m: Mapping) -> list[tuple[int, int, int]]:
    """(lo, hi, lock flags) covering mapping ``m`` in address order: the vmas Linux would show
    for it, split where mlock/munlock changed the flags of part of it."""
    _lock_sync(mm)
    out: list[tuple[int, int, int]] = []
    cur = m.start
    for lo, hi, ref, _off, fl in _lock_records(mm):
        if hi <= m.start or lo >= m.end or ref() is not m.buf:
            continue
        lo, hi = max(lo, m.start), min(hi, m.end)
        if lo > cur:
            out.append((cur, lo, 0))
        if out and out[-1][1] == lo and out[-1][2] == fl:
            out[-1] = (out[-1][0], hi, fl)
        else:
            out.append((lo, hi, fl))
        cur = hi
    if cur < m.end:
        out.append((cur, m.end, 0))
    return out


def locked_bytes(mm: Any) -> int:
    """VmLck: the locked ranges that are still mapped (munmap drops a lock with its pages)."""
    total = 0
    for a, b in _locked(mm):
        for _m, lo, hi in _pieces(mm, a, b):
            total += hi - lo
    return total


# ---- memfd_create (mm/memfd.c) ---------------------------------------------------------------
MFD_CLOEXEC, MFD_ALLOW_SEALING, MFD_HUGETLB = 1, 2, 4
MFD_NOEXEC_SEAL, MFD_EXEC = 8, 0x10
MFD_HUGE_MASK = 0x3F << 26
MFD_NAME_MAX_LEN = 255 - len("memfd:")          # 249
EFBIG = 27                                      # asm-generic/errno-base.h
SHM_DEV = 0x1                                   # st_dev of the kernel's internal shm mount
SHM_CAPACITY = 1 << 40                          # the largest memfd (EFBIG past it)
# the seals (F_ADD_SEALS, include/uapi/linux/fcntl.h)
F_SEAL_SEAL, F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_WRITE = 1, 2, 4, 8
F_SEAL_FUTURE_WRITE, F_SEAL_EXEC = 0x10, 0x20
O_TRUNC = 0o1000                                # the same bit on arm64 and riscv64


# the host views behind shared memfd mappings made through a writable, unsealed description:
# VM_MAYWRITE, so mprotect may add PROT_WRITE to them later (a split mapping keeps its view)
SHARED_MAYWRITE: "weakref.WeakSet[mmap.mmap]" = weakref.WeakSet()
_MEMFD_INODES = itertools.count(1)      # the identity of each memfd's inode (fs/meta.py's key)


def _memfd_file_class():
    """MemfdFile, built on first use (fs.file imports the files module, as this one does)."""

    class MemfdFile(HostFile):
        """A shmem file with no name in any directory (shmem_file_setup): its bytes live in the
        kernel.  It is a HostFile without a host descriptor, so read/write/pread/pwrite/lseek/
        ftruncate/fstat and mmap take the regular-file paths; /proc/PID/fd names it
        "/memfd:NAME (deleted)" as Linux's d_path of an unlinked shmem dentry does.

        Like shmem's page cache it is sparse: the size is a number, and only the pages the guest
        has written hold memory (a dict of page index -> page).  A hole reads as zeros and costs
        nothing, so ``ftruncate(fd, 2**40 - 1)`` is free, as on Linux.  Each page the file holds
        is charged to the machine's guest memory pool (``--mem-limit``), as shmem charges its
        folios to the memory cgroup: a write that needs a page past the limit stops there
        (ENOMEM when nothing was written), and the charge goes back when a truncate drops the
        page or the last descriptor closes."""

        kind = "memfd"

        def __init__(self, name: str, pool: Any = None, seals: int = F_SEAL_SEAL) -> None:
            # two memfds of one name are two inodes: a chmod of one must not show in the other
            node = Node(path=f"/memfd:{name} (deleted)", mode=0o100777, dev=SHM_DEV,
                        extra={"inode": next(_MEMFD_INODES)})
            super().__init__(node, 2, -1)           # O_RDWR
            self.length = 0
            # page index -> page; once shared (``host_fd`` >= 0) the bytes live in the host
            # memfd and the values are None: the dict then only says which pages are charged
            self.pages: dict[int, bytearray | None] = {}
            self.pool = pool                        # the machine's MemoryPool (None: uncharged)
            # the seals (F_ADD_SEALS); without MFD_ALLOW_SEALING F_SEAL_SEAL is set from the start
            self.seals = seals
            # shared mappings that are or may become writable (mapping_map_writable): F_SEAL_WRITE
            # is EBUSY while any is mapped — counted by the host views still alive
            self.writable_views: "weakref.WeakSet[mmap.mmap]" = weakref.WeakSet()
            # a sparse host memfd holding the bytes, made by the first MAP_SHARED mapping so
            # that every mapping, in every process, and read/write see one set of pages
            # (as /dev/shm's files do, kernel/fs/shmfs.py); -1 until then
            self.host_fd = -1
            # this object is the inode and its first open description; opens of it through
            # /proc/PID/fd/N make more descriptions (MemfdReopened), and the pages go with the last
            self.descriptions = 1
            self.closed = False
            node.opener = self.reopen

        def size(self) -> int:
            return self.length

        # ---- the shared (host memfd) form ----------------------------------------------------
        def share(self) -> int:
            """Move the bytes into a sparse host memfd (once): 0, or -ENOMEM/-ENFILE when the
            host refuses one."""
            if self.host_fd >= 0:
                return 0
            try:
                fd = os.memfd_create("emukern-memfd", os.MFD_CLOEXEC)
            except OSError as e:
                return -E.ENFILE if e.errno in (E.EMFILE, E.ENFILE) else -E.ENOMEM
            if not host_fd_admit(fd):
                return -E.ENFILE                    # fs.file-max: see kernel/files.py
            try:
                os.ftruncate(fd, SHM_CAPACITY)
                for idx, page in self.pages.items():
                    if page is not None:
                        os.pwrite(fd, page, idx * PAGE)
            except OSError:
                os.close(fd)
                return -E.ENOMEM
            self.pages = dict.fromkeys(self.pages)
            self.host_fd = fd
            return 0

        def shared_view(self, off: int, length: int, writable: bool) -> mmap.mmap:
            """A host MAP_SHARED mapping of the file's pages [off, off+length) (OSError when the
            host refuses it)."""
            view = mmap.mmap(self.host_fd, length, flags=mmap.MAP_SHARED,
                             prot=mmap.PROT_READ | mmap.PROT_WRITE, offset=off)
            if writable:
                self.writable_views.add(view)
                SHARED_MAYWRITE.add(view)
            return view

        def has_writable_mappings(self) -> bool:
            return any(not v.closed for v in self.writable_views)

        # ---- the file operations -------------------------------------------------------------
        def pread(self, count: int, off: int) -> bytes | int:
            end = min(self.length, off + min(count, MAX_IO))
            if end <= off:
                return b""
            if self.host_fd >= 0:
                return os.pread(self.host_fd, end - off, off)
            out = bytearray(end - off)          # zeros: the holes
            pos = off
            while pos < end:
                idx, in_page = divmod(pos, PAGE)
                n = min(PAGE - in_page, end - pos)
                page = self.pages.get(idx)
                if page is not None:
                    out[pos - off: pos - off + n] = page[in_page: in_page + n]
                pos += n
            return bytes(out)

        def pwrite(self, data: bytes, off: int) -> int:
            if off + len(data) > 1 << 40:
                return -EFBIG
            if data and self.seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE):
                return -E.EPERM                     # shmem_write_begin: sealed against writes
            if self.seals & F_SEAL_GROW and off + len(data) > self.length:
                # ... or against growing: the page-sized pieces that end inside the file are
                # written, the first that would grow it is EPERM
                stop = self.length // PAGE * PAGE
                data = data[:max(0, stop - off)]
                if not data:
                    return -E.EPERM
            done = 0
            while done < len(data):
                idx, in_page = divmod(off + done, PAGE)
                n = min(PAGE - in_page, len(data) - done)
                piece = data[done: done + n]
                if idx not in self.pages:
                    if not any(piece):
                        if self.host_fd >= 0:       # (a page only a mapping wrote holds data)
                            os.pwrite(self.host_fd, piece, off + done)
                        done += n                   # zeros onto a hole: it stays a hole
                        continue
                    if self.pool is not None:
                        try:
                            self.pool.charge(PAGE, "memfd page")
                        except OutOfMemory:
                            break                   # shmem's charge failed: a short write
                    self.pages[idx] = None if self.host_fd >= 0 else bytearray(PAGE)
                page = self.pages[idx]
                if page is None:
                    os.pwrite(self.host_fd, piece, off + done)
                else:
                    page[in_page: in_page + n] = piece
                done += n
            if done:
                self.length = max(self.length, off + done)
                return done
            if not data:
                return 0
            return -E.ENOMEM

        def truncate(self, length: int) -> int:
            if length > 1 << 40:
                return -EFBIG
            if (length < self.length and self.seals & F_SEAL_SHRINK) or \
                    (length > self.length and self.seals & F_SEAL_GROW):
                return -E.EPERM                     # shmem_setattr: the size is sealed
            if length < self.length:
                first = page_up(length) // PAGE     # pages wholly past the new end go
                for idx in [i for i in self.pages if i >= first]:
                    self._drop(idx)
                if self.host_fd >= 0:
                    os.ftruncate(self.host_fd, length)          # frees the host pages past it
                    os.ftruncate(self.host_fd, SHM_CAPACITY)    # ... which read as zeros again
                else:
                    tail = self.pages.get(length // PAGE)
                    if tail is not None and length % PAGE:
                        tail[length % PAGE:] = bytes(PAGE - length % PAGE)   # reads past EOF grow zeros
            self.length = length
            return 0

        def _last_data(self, lo: int, hi: int) -> int | None:
            """The index of the last page in [lo, hi) that may hold data, or None."""
            if self.host_fd < 0:
                return max((i for i in self.pages if lo <= i < hi), default=None)
            last, pos = None, lo * PAGE             # the host's SEEK_DATA/SEEK_HOLE walk
            while pos < hi * PAGE:
                try:
                    start = os.lseek(self.host_fd, pos, os.SEEK_DATA)
                except OSError:                     # ENXIO: no data after pos
                    break
                if start >= hi * PAGE:
                    break
                pos = os.lseek(self.host_fd, start, os.SEEK_HOLE)
                last = min(hi * PAGE, pos) // PAGE - (0 if pos % PAGE else 1)
            return last

        def mmap_bytes(self, count: int, off: int) -> bytes:
            """The file's bytes for a private copy of [off, off+count), cut after the last page
            that holds data: the mapping reads the rest as zeros anyway, so a mapping over a
            large hole needs no host memory for it."""
            end = min(self.length, off + count)
            last = self._last_data(off // PAGE, page_up(end) // PAGE)
            if last is None:
                return b""
            stop = min(end, (last + 1) * PAGE)
            parts = []
            pos = off
            while pos < stop:
                got = self.pread(stop - pos, pos)
                assert isinstance(got, bytes)
                if not got:
                    break
                parts.append(got)
                pos += len(got)
            return b"".join(parts)

        def _drop(self, idx: int) -> None:
            del self.pages[idx]
            if self.pool is not None:
                self.pool.uncharge(PAGE)

        def reopen(self, flags: int) -> "MemfdFile | int":
            """A new open file description of this inode (what the /proc/PID/fd/N magic link
            opens): its own position and access mode, the inode's pages, size and seals; or
            -errno when O_TRUNC may not empty it (the seals against shrinking)."""
            if flags & O_TRUNC:
                err = self.truncate(0)
                if err:
                    return err
            return MemfdReopened(self, flags)

        def _release(self) -> None:
            if self.__dict__.get("closed", True):
                return                              # (this description let go already)
            self.__dict__["closed"] = True
            self._drop_description()

        def _drop_description(self) -> None:
            self.descriptions -= 1
            if self.descriptions > 0:
                return                              # another description still holds the inode
            self.fd = -1
            for idx in list(getattr(self, "pages", ())):
                self._drop(idx)
            if getattr(self, "host_fd", -1) >= 0:
                os.close(self.host_fd)              # (mappings keep their own host views)
                self.host_fd = -1

    class MemfdReopened(MemfdFile):
        """A second (third, ...) open file description of a memfd inode: it keeps its own
        position, open flags and reference count, and every other attribute -- the pages, the
        size, the seals, the host memfd, the node -- is the inode's (read and written through
        to it), so the methods above act on the one inode whichever description calls them."""

        _OWN = frozenset(("inode", "pos", "flags", "readable", "writable", "refs", "closed"))

        def __init__(self, inode: "MemfdFile", flags: int) -> None:     # noqa: super not called
            d = self.__dict__
            d["inode"] = inode
            d["refs"], d["pos"], d["flags"], d["closed"] = 0, 0, flags, False
            acc = flags & 3
            d["readable"], d["writable"] = acc != 1, acc in (1, 2)
            inode.descriptions += 1

        def __getattr__(self, name: str) -> Any:
            if name.startswith("__") or "inode" not in self.__dict__:
                raise AttributeError(name)
            return getattr(self.__dict__["inode"], name)

        def __setattr__(self, name: str, value: Any) -> None:
            if name in self._OWN:
                self.__dict__[name] = value
            else:
                setattr(self.__dict__["inode"], name, value)

        def reopen(self, flags: int) -> "MemfdFile | int":
            return self.__dict__["inode"].reopen(flags)

        def _release(self) -> None:
            if self.__dict__.get("closed", True):
                return
            self.__dict__["closed"] = True
            self.__dict__["inode"]._drop_description()

    return MemfdFile





