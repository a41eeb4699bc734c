"""The memory syscalls beyond mmap/munmap/mprotect/madvise: mremap, the mlock family, msync,
mincore, membarrier and remap_file_pages.

An emukern mapping (machine/memory.py ``Mapping``) is a window on a host buffer; Linux's vma is
what a run of adjacent mappings with the same permissions and name forms (emukern splits its
mappings where Linux keeps one vma, e.g. after a grow in place), so the "does the range fit in
one vma" rules of mremap are asked of such a run (:func:`vma_end`).

The guest runs as root (getuid() == 0), so it has CAP_IPC_LOCK: like Linux's can_do_mlock and
mlock_future_ok for a capable task, RLIMIT_MEMLOCK never refuses a lock here.  Locked ranges
are kept per mm (not inherited by fork, as Linux's VM_LOCKED is cleared in the child) and only
matter for msync's EBUSY; every mapped page is resident anyway.
"""
from __future__ import annotations

from typing import Any

from emukern.errors import MemoryFault
from emukern.kernel import errno as E
from emukern.machine.memory import PAGE, Mapping, OutOfMemory, _host_buffer, is_shared, page_up

MM_SYSCALL_NAMES = {
    216: "mremap", 227: "msync", 228: "mlock", 229: "munlock", 230: "mlockall",
    231: "munlockall", 232: "mincore", 234: "remap_file_pages", 283: "membarrier", 284: "mlock2",
    279: "memfd_create",
}

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


def _charge(mm: Any, size: int, what: str) -> None:
    from emukern.machine.memory import AS_LIMIT
    if mm.mapped + size > AS_LIMIT:
        raise OutOfMemory(f"{what}: address-space limit")
    if mm.pool is not None:
        mm.pool.charge(size, what)
    mm.mapped += size


def _locked(mm: Any) -> list[list[int]]:
    got = mm.__dict__.get("_mlocked")
    if got is None:
        got = mm.__dict__["_mlocked"] = []
    return got


def _lock_ranges(mm: Any, start: int, end: int, lock: bool) -> None:
    """Add [start, end) to (or take it from) the mm's locked ranges, kept sorted and merged."""
    out: list[list[int]] = []
    for a, b in _locked(mm):
        if b <= start or a >= end:
            out.append([a, b])
            continue
        if a < start:
            out.append([a, start])
        if b > end:
            out.append([end, b])
    if lock:
        out.append([start, end])
    out.sort()
    merged: list[list[int]] = []
    for a, b in out:
        if merged and merged[-1][1] >= a:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    mm.__dict__["_mlocked"] = merged


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


def _memfd_file_class():
    """MemfdFile, built on first use (fs.file imports the files module, as this one does)."""
    from emukern.kernel.fs.file import MAX_IO, HostFile
    from emukern.kernel.fs.vfs import Node

    class MemfdFile(HostFile):
        """A shmem file with no name in any directory (shmem_file_setup): its bytes live in the
        kernel.  It is a HostFile without a host descriptor, so read/write/pread/pwrite/lseek/
        ftruncate/fstat and mmap take the regular-file paths; /proc/PID/fd names it
        "/memfd:NAME (deleted)" as Linux's d_path of an unlinked shmem dentry does."""

        kind = "memfd"

        def __init__(self, name: str) -> None:
            node = Node(path=f"/memfd:{name} (deleted)", mode=0o100777, dev=SHM_DEV)
            super().__init__(node, 2, -1)           # O_RDWR
            self.data = bytearray()

        def size(self) -> int:
            return len(self.data)

        def pread(self, count: int, off: int) -> bytes | int:
            return bytes(self.data[off: off + min(count, MAX_IO)])

        def pwrite(self, data: bytes, off: int) -> int:
            if off + len(data) > 1 << 40:
                return -EFBIG
            if off > len(self.data):
                self.data.extend(bytes(off - len(self.data)))
            self.data[off: off + len(data)] = data
            return len(data)

        def truncate(self, length: int) -> int:
            if length > 1 << 40:
                return -EFBIG
            if length < len(self.data):
                del self.data[length:]
            else:
                self.data.extend(bytes(length - len(self.data)))
            return 0

        def _release(self) -> None:
            self.fd = -1

    return MemfdFile


class MemfdMixin:
    cost: Any

    def sys_memfd_create(self, cpu, task, uname, flags, *a):
        """mm/memfd.c memfd_create: unknown flags, MFD_EXEC with MFD_NOEXEC_SEAL, or a name
        longer than 249 bytes: EINVAL; a bad name pointer: EFAULT.  MFD_HUGETLB is EINVAL here
        (emukern has no hugetlbfs).  Seals are not modelled (MFD_ALLOW_SEALING is accepted)."""
        cpu.charge(self.cost.syscall_body)
        flags &= 0xFFFFFFFF
        if flags & ~(MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_HUGETLB | MFD_NOEXEC_SEAL | MFD_EXEC
                     | MFD_HUGE_MASK):
            return -E.EINVAL
        if flags & MFD_HUGE_MASK and not flags & MFD_HUGETLB:
            return -E.EINVAL
        if flags & MFD_EXEC and flags & MFD_NOEXEC_SEAL:
            return -E.EINVAL
        if flags & MFD_HUGETLB:
            return -E.EINVAL
        name = bytearray()
        try:
            while len(name) <= MFD_NAME_MAX_LEN:
                c = task.mm.read(uname + len(name), 1)
                if c == b"\0":
                    break
                name += c
        except MemoryFault:             # the name is not readable
            return -E.EFAULT
        if len(name) > MFD_NAME_MAX_LEN:
            return -E.EINVAL
        f = _memfd_file_class()(bytes(name).decode("utf-8", "surrogateescape"))
        return task.files.install(f, cloexec=bool(flags & MFD_CLOEXEC))


class MmSyscallsMixin(MemfdMixin):
    """mm/mremap.c, mm/mlock.c, mm/msync.c, mm/mincore.c, kernel/sched/membarrier.c."""

    cost: Any
    arch: Any

    # ---- mremap ----------------------------------------------------------------------------
    def sys_mremap(self, cpu, task, addr, old_len, new_len, flags, new_addr, *a):
        """SYSCALL_DEFINE5(mremap): the argument checks in its order, then mremap_to for FIXED
        or DONTUNMAP, a shrink in place, a grow in place (vma_expandable), or move_vma."""
        cpu.charge(self.cost.mmap_op)
        mm = task.mm
        addr = self.arch.untagged_addr(addr & _U64)
        flags &= 0xFFFFFFFF
        if flags & ~(MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP):
            return -E.EINVAL
        if flags & MREMAP_FIXED and not flags & MREMAP_MAYMOVE:
            return -E.EINVAL
        if flags & MREMAP_DONTUNMAP and (not flags & MREMAP_MAYMOVE or old_len != new_len):
            return -E.EINVAL
        if addr % PAGE:
            return -E.EINVAL
        if old_len > 1 << 62 or new_len > 1 << 62:
            return -E.EINVAL if new_len > 1 << 62 else -E.EFAULT
        old_len, new_len = page_up(old_len), page_up(new_len)
        if not new_len:
            return -E.EINVAL
        task_size = self.arch.STACK_TOP
        try:
            if flags & (MREMAP_FIXED | MREMAP_DONTUNMAP):
                return self._mremap_to(mm, addr, old_len, new_len, flags, new_addr & _U64, task_size)
            if old_len >= new_len:
                # "Always allow a shrinking remap: that just unmaps the unnecessary pages"
                if old_len > new_len:
                    mm.unmap(addr + new_len, old_len - new_len)
                return addr
            err = self._resize_is_valid(mm, addr, old_len, new_len, flags)
            if err:
                return err
            end = vma_end(mm, addr)
            if old_len == end - addr:
                # vma_expandable: the pages after the vma free and below TASK_SIZE
                grow = new_len - old_len
                if addr + new_len <= task_size and not mm.overlaps(addr + old_len, grow):
                    self._grow_in_place(mm, addr, old_len, new_len)
                    return addr
            if not flags & MREMAP_MAYMOVE:
                return -E.ENOMEM
            dst = self.get_unmapped_area(mm, 0, new_len)
            if dst < PAGE:
                return -E.ENOMEM
            self._move_vma(mm, addr, old_len, new_len, dst, flags)
            return dst
        except OutOfMemory:
            return -E.ENOMEM

    def _resize_is_valid(self, mm, addr, old_len, new_len, flags) -> int:
        """mm/mremap.c resize_is_valid (vma_to_resize in older kernels)."""
        m = mm.find(addr)
        if m is None:
            return -E.EFAULT
        if not old_len and not is_shared(m):
            return -E.EINVAL          # "duplicating" a private mapping makes no sense: refused
        if flags & MREMAP_DONTUNMAP and not is_shared(m) and m.name != "[anon]":
            return -E.EINVAL          # emukern: a private file mapping's old range cannot refault
        if old_len > vma_end(mm, addr) - addr:
            return -E.EFAULT          # "We can't remap across vm area boundaries"
        return 0

    def _mremap_to(self, mm, addr, old_len, new_len, flags, new_addr, task_size) -> int:
        """mm/mremap.c mremap_to: the target is checked (and for FIXED cleared), the old range's
        tail beyond new_len unmapped, then the vma moved."""
        if flags & MREMAP_FIXED:
            if new_addr % PAGE:
                return -E.EINVAL
            if new_len > task_size or new_addr > task_size - new_len:
                return -E.EINVAL
            if addr < new_addr + new_len and new_addr < addr + old_len:
                return -E.EINVAL      # the ranges may not overlap
        # check the source before changing anything (Linux unmaps the target first, but a
        # failed check there leaves the target unmapped too: the same visible result whenever
        # the call succeeds, and the safer one when it fails)
        err = self._resize_is_valid(mm, addr, min(old_len, new_len) if old_len else 0, new_len, flags)
        if err:
            return err
        if flags & MREMAP_FIXED:
            mm.unmap(new_addr, new_len)
        if old_len > new_len:
            mm.unmap(addr + new_len, old_len - new_len)
            old_len = new_len
        if not flags & MREMAP_FIXED:
            # DONTUNMAP without FIXED: new_addr is a hint, as mremap_to passes it to
            # get_unmapped_area
            new_addr = self.get_unmapped_area(mm, new_addr, new_len)
            if new_addr < PAGE:
                return -E.ENOMEM
        self._move_vma(mm, addr, old_len, new_len, new_addr, flags)
        return new_addr

    def _grow_in_place(self, mm, addr, old_len, new_len) -> None:
        """vma_expand: new zero pages after the vma, same permissions and name.  A shared
        mapping's new pages are its buffer's if it is long enough (a range mremap shrank
        before), else new memory of their own."""
        last = mm.find(addr + old_len - 1)
        grow = new_len - old_len
        if is_shared(last) and last.offset + last.size + grow <= len(last.buf):
            _charge(mm, grow, "mremap")
            _insert(mm, Mapping(addr + old_len, grow, last.perms, last.name, last.buf,
                                last.offset + last.size))
            return
        # one vma grows: the last piece becomes a larger buffer holding its bytes (so the pieces
        # stay one vma for the next mremap), the new pages zero
        _charge(mm, grow, "mremap")
        try:
            buf = _host_buffer(last.size + grow, "mremap")
        except OutOfMemory:
            mm.mapped -= grow
            if mm.pool is not None:
                mm.pool.uncharge(grow)
            raise
        buf[: last.size] = last.buf[last.offset: last.offset + last.size]
        i = mm.mappings.index(last)
        mm.mappings[i] = Mapping(last.start, last.size + grow, last.perms, last.name, buf)
        mm._changed()
        mm.version += 1
        if "x" in last.perms:
            mm.code_gen += 1

    def _move_vma(self, mm, addr, old_len, new_len, dst, flags) -> None:
        """mm/mremap.c move_vma: the pages of [addr, addr+old_len) appear at dst (a grown vma's
        extra pages are zero), the old range goes (or, with DONTUNMAP, stays mapped: empty for
        private anonymous memory, the same pages for a shared mapping)."""
        if old_len == 0:              # duplicating a shared mapping: the same object again
            m = mm.find(addr)
            off = m.offset + addr - m.start
            if off + new_len <= len(m.buf):
                _charge(mm, new_len, "mremap")
                _insert(mm, Mapping(dst, new_len, m.perms, m.name, m.buf, off))
            else:
                mm.map(dst, new_len, m.perms, m.name)
            return
        pieces = _pieces(mm, addr, addr + old_len)
        first = pieces[0][0]
        if is_shared(first) and first.offset + (addr - first.start) + new_len <= len(first.buf) \
                and all(m.buf is first.buf for m, _lo, _hi in pieces):
            # one shmem/file object: the new range maps the same pages (fork peers still see them)
            _charge(mm, new_len, "mremap")
            _insert(mm, Mapping(dst, new_len, first.perms, first.name, first.buf,
                                first.offset + addr - first.start))
        else:
            size = new_len
            _charge(mm, size, "mremap")
            try:
                buf = _host_buffer(size, "mremap")
            except OutOfMemory:
                mm.mapped -= size
                if mm.pool is not None:
                    mm.pool.uncharge(size)
                raise
            pos = 0
            for m, lo, hi in pieces:
                o = m.offset + lo - m.start
                buf[pos: pos + hi - lo] = m.buf[o: o + hi - lo]
                pos += hi - lo
            _insert(mm, Mapping(dst, size, first.perms, first.name, buf))
        locked = any(a < addr + old_len and addr < b for a, b in _locked(mm))
        if flags & MREMAP_DONTUNMAP:
            if not is_shared(first):
                # the old range stays, its pages gone: the next touch sees zero-filled memory
                mm.unmap(addr, old_len)
                mm.map(addr, old_len, first.perms, first.name)
        else:
            mm.unmap(addr, old_len)
            if locked:                # VM_LOCKED moves with the vma
                _lock_ranges(mm, addr, addr + old_len, False)
                _lock_ranges(mm, dst, dst + new_len, True)
        if "x" in first.perms:
            mm.code_gen += 1          # the code moved: the CPUs' code caches start again

    # ---- mlock family ----------------------------------------------------------------------
    def _lock_range_args(self, task, start, length) -> tuple[int, int] | int:
        """mm/mlock.c do_mlock/munlock: start rounded down, len rounded up over the offset;
        an overflow is EINVAL, any unmapped page in the range ENOMEM (apply_vma_lock_flags)."""
        start = self.arch.untagged_addr(start & _U64)
        length &= _U64
        end_raw = (start % PAGE) + length
        first = start - start % PAGE
        if page_up(end_raw) < end_raw or first + page_up(end_raw) > 1 << 64:
            return -E.EINVAL
        end = first + page_up(end_raw)
        if end == first:
            return first, end
        if not _fully_mapped(task.mm, first, end):
            return -E.ENOMEM
        return first, end

    def sys_mlock(self, cpu, task, start, length, *a):
        return self.sys_mlock2(cpu, task, start, length, 0)

    def sys_mlock2(self, cpu, task, start, length, flags, *a):
        """mm/mlock.c mlock2: only MLOCK_ONFAULT is a flag; root has CAP_IPC_LOCK, so
        RLIMIT_MEMLOCK is not checked (see the module docstring)."""
        cpu.charge(self.cost.mmap_op)
        if flags & 0xFFFFFFFF & ~MLOCK_ONFAULT:
            return -E.EINVAL
        got = self._lock_range_args(task, start, length)
        if isinstance(got, int):
            return got
        if got[1] > got[0]:
            _lock_ranges(task.mm, got[0], got[1], True)
        return 0

    def sys_munlock(self, cpu, task, start, length, *a):
        cpu.charge(self.cost.mmap_op)
        got = self._lock_range_args(task, start, length)
        if isinstance(got, int):
            return got
        if got[1] > got[0]:
            _lock_ranges(task.mm, got[0], got[1], False)
        return 0

    def sys_mlockall(self, cpu, task, flags, *a):
        """mm/mlock.c mlockall: some of MCL_CURRENT/MCL_FUTURE, MCL_ONFAULT only with one."""
        cpu.charge(self.cost.mmap_op)
        flags &= 0xFFFFFFFF
        if not flags or flags & ~(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) or flags == MCL_ONFAULT:
            return -E.EINVAL
        mm = task.mm
        if flags & MCL_CURRENT:
            for m in mm.mappings:
                _lock_ranges(mm, m.start, m.end, True)
        mm.__dict__["_mlock_future"] = bool(flags & MCL_FUTURE)
        return 0

    def sys_munlockall(self, cpu, task, *a):
        cpu.charge(self.cost.mmap_op)
        task.mm.__dict__["_mlocked"] = []
        task.mm.__dict__["_mlock_future"] = False
        return 0

    # ---- msync / mincore -------------------------------------------------------------------
    def sys_msync(self, cpu, task, start, length, flags, *a):
        """mm/msync.c: bad flags or MS_ASYNC with MS_SYNC, or an unaligned start: EINVAL; an
        unmapped page in the range: ENOMEM (after the mapped parts); MS_INVALIDATE of a locked
        range: EBUSY.  The data is written nowhere: emukern's shared file mappings are
        read-only and anonymous memory has no backing store."""
        cpu.charge(self.cost.mmap_op)
        start = self.arch.untagged_addr(start & _U64)
        flags &= 0xFFFFFFFF
        if flags & ~(MS_ASYNC | MS_INVALIDATE | MS_SYNC):
            return -E.EINVAL
        if start % PAGE:
            return -E.EINVAL
        if flags & MS_ASYNC and flags & MS_SYNC:
            return -E.EINVAL
        length = page_up(length & _U64)
        end = start + length
        if end < start or end > 1 << 64:
            return -E.ENOMEM
        if end == start:
            return 0
        mm = task.mm
        unmapped = not _fully_mapped(mm, start, end)
        if flags & MS_INVALIDATE:
            for a, b in _locked(mm):
                for _m, lo, hi in _pieces(mm, max(a, start), min(b, end)):
                    if lo < hi:
                        return -E.EBUSY
        return -E.ENOMEM if unmapped else 0

    def sys_mincore(self, cpu, task, start, length, vec, *a):
        """mm/mincore.c: start unaligned: EINVAL; the range past TASK_SIZE: ENOMEM; one byte per
        page with bit 0 set (every mapped page is resident here) up to the first hole, which is
        ENOMEM; a vector the task cannot write: EFAULT."""
        cpu.charge(self.cost.mmap_op)
        from emukern.kernel.uaccess import copy_to_user
        start = self.arch.untagged_addr(start & _U64)
        length &= _U64
        if start % PAGE:
            return -E.EINVAL
        if length > (1 << 64) - start or start + length > self.arch.STACK_TOP:
            return -E.ENOMEM
        pages = page_up(length) // PAGE
        mm = task.mm
        out = bytearray()
        for i in range(pages):
            if mm.find(start + i * PAGE) is None:
                break
            out.append(1)
        if out:
            got = copy_to_user(self, cpu, task, vec, bytes(out))
            if isinstance(got, int) and got < 0:
                return got
        return -E.ENOMEM if len(out) < pages else 0

    # ---- the rest --------------------------------------------------------------------------
    def sys_membarrier(self, cpu, task, cmd, flags, cpu_id, *a):
        """kernel/sched/membarrier.c: QUERY's mask of what is supported (all but the rseq pair:
        emukern has no rseq), registration per process, EPERM for a private expedited command
        before its registration.  Each simulated CPU is one Unicorn whose stores the others see
        at once, and a syscall is already a full barrier on the calling CPU: beyond the checks
        there is nothing to do."""
        cpu.charge(self.cost.syscall_body)
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

    def sys_remap_file_pages(self, cpu, task, start, size, prot, pgoff, flags, *a):
        """mm/mmap.c remap_file_pages: Linux 6.x emulates it with mmap of a shared file mapping;
        prot must be 0, and the range must lie in one VM_SHARED vma, else EINVAL.  emukern's
        shared file mappings are whole-file copies that cannot be re-pointed at another file
        offset, so a valid call is answered as Linux does for a non-shared one: EINVAL."""
        cpu.charge(self.cost.mmap_op)
        return -E.EINVAL

