"""mremap <-> mm/mremap.c.

``sys_mremap`` follows SYSCALL_DEFINE5(mremap): the argument checks in Linux's order, then
``_mremap_to`` for MREMAP_FIXED/DONTUNMAP, a shrink in place, a grow in place
(``_grow_in_place``) or ``_move_vma``.  An emukern mapping is a window on a host buffer and
emukern may split what Linux keeps as one vma, so "fits in one vma" is asked of a run of
adjacent mappings with the same permissions and name (kernel/mm/vma.py's ``vma_end``).  The
module also holds ``_lock_range_args``, mm/mlock.c's range check shared with mlock.py.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.fs.file import view_again
from emukern.kernel.mm import mmap as mm_mmap
from emukern.kernel.mm import seal as mm_seal
from emukern.kernel.mm.vma import (
    _U64,
    MREMAP_DONTUNMAP,
    MREMAP_FIXED,
    MREMAP_MAYMOVE,
    _charge,
    _fully_mapped,
    _insert,
    _lock_ranges,
    _locked,
    _pieces,
    vma_end,
)
from emukern.machine.memory import PAGE, Mapping, OutOfMemory, _host_buffer, is_shared, page_up

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


# ---- mremap ----------------------------------------------------------------------------
def sys_mremap(k: "Kernel", cpu, task, addr, old_len, new_len, flags, new_addr, *a):
    """SYSCALL_DEFINE5(mremap): the argument checks in its order, then mremap_to for FIXED
    or DONTUNMAP, a shrink in place, a grow in place (vma_expandable), or move_vma."""
    cpu.charge(k.cost.mmap_op)
    mm = task.mm
    addr = k.arch.untagged_addr(addr & _U64)
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
    task_size = k.arch.STACK_TOP
    if mm.find(addr) is not None and mm_seal.range_sealed(mm, addr, addr + 1):
        return -E.EPERM           # a sealed vma is never resized or moved
    try:
        if flags & (MREMAP_FIXED | MREMAP_DONTUNMAP):
            return _mremap_to(k, mm, addr, old_len, new_len, flags, new_addr & _U64, task_size)
        if old_len >= new_len:
            # "Always allow a shrinking remap: that just unmaps the unnecessary pages"
            if old_len > new_len:
                mm.unmap(addr + new_len, old_len - new_len)
            return addr
        err = _resize_is_valid(k, mm, addr, old_len, new_len, flags)
        if err:
            return err
        end = vma_end(mm, addr)
        if old_len == end - addr:
            # vma_expandable: the pages after the vma free and below TASK_SIZE
            grow = new_len - old_len
            if addr + new_len <= task_size and not mm.overlaps(addr + old_len, grow):
                _grow_in_place(k, mm, addr, old_len, new_len)
                return addr
        if not flags & MREMAP_MAYMOVE:
            return -E.ENOMEM
        dst = mm_mmap.get_unmapped_area(k, mm, 0, new_len)
        if dst < PAGE:
            return -E.ENOMEM
        _move_vma(k, mm, addr, old_len, new_len, dst, flags)
        return dst
    except OutOfMemory:
        return -E.ENOMEM


def _resize_is_valid(k: "Kernel", mm, addr, old_len, new_len, flags) -> int:
    """mm/mremap.c resize_is_valid (vma_to_resize in older kernels)."""
    m = mm.find(addr)
    if m is None:
        return -E.EFAULT
    if not old_len and not is_shared(m):
        return -E.EINVAL          # "duplicating" a private mapping makes no sense: refused
    if flags & MREMAP_DONTUNMAP and not is_shared(m) and m.name not in ("[anon]", "file:/dev/zero"):
        return -E.EINVAL          # emukern: a private file mapping's old range cannot refault
    if old_len > vma_end(mm, addr) - addr:
        return -E.EFAULT          # "We can't remap across vm area boundaries"
    return 0


def _mremap_to(k: "Kernel", mm, addr, old_len, new_len, flags, new_addr, task_size) -> int:
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
    err = _resize_is_valid(k, mm, addr, min(old_len, new_len) if old_len else 0, new_len, flags)
    if err:
        return err
    if flags & MREMAP_FIXED:
        if mm_seal.range_sealed(mm, new_addr, new_addr + new_len):
            return -E.EPERM       # the target's do_munmap meets a sealed vma
        mm.unmap(new_addr, new_len)
    if old_len > new_len:
        mm.unmap(addr + new_len, old_len - new_len)
        old_len = new_len
    if not flags & MREMAP_FIXED:
        # DONTUNMAP without FIXED: new_addr is a hint, as mremap_to passes it to
        # get_unmapped_area
        new_addr = mm_mmap.get_unmapped_area(k, mm, new_addr, new_len)
        if new_addr < PAGE:
            return -E.ENOMEM
    _move_vma(k, mm, addr, old_len, new_len, new_addr, flags)
    return new_addr


def _grow_in_place(k: "Kernel", mm, addr, old_len, new_len) -> None:
    """vma_expand: new zero pages after the vma, same permissions and name.  A shared
    mapping's new pages are its buffer's if it is long enough (a range mremap shrank
    before), else new memory of their own."""
    last = mm.find(addr + old_len - 1)
    grow = new_len - old_len
    if is_shared(last) and last.offset + last.size + grow <= len(last.buf):
        _charge(mm, grow, "mremap", last.buf)
        _insert(mm, Mapping(addr + old_len, grow, last.perms, last.name, last.buf,
                            last.offset + last.size))
        return
    view = view_again(last.buf, last.offset, last.size + grow) if is_shared(last) else None
    if view is not None:
        # a root file's shared mapping grows over the file's next pages: a larger host
        # mapping of the same file replaces the last piece
        _charge(mm, grow, "mremap", view)
        i = mm.mappings.index(last)
        mm.mappings[i] = Mapping(last.start, last.size + grow, last.perms, last.name, view)
        mm._changed()
        mm.version += 1
        if "x" in last.perms:
            mm.code_gen += 1
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


def _move_vma(k: "Kernel", mm, addr, old_len, new_len, dst, flags) -> None:
    """mm/mremap.c move_vma: the pages of [addr, addr+old_len) appear at dst (a grown vma's
    extra pages are zero), the old range goes (or, with DONTUNMAP, stays mapped: empty for
    private anonymous memory, the same pages for a shared mapping)."""
    if old_len == 0:              # duplicating a shared mapping: the same object again
        m = mm.find(addr)
        off = m.offset + addr - m.start
        view = None if off + new_len <= len(m.buf) else view_again(m.buf, off, new_len)
        if off + new_len <= len(m.buf) or view is not None:
            _charge(mm, new_len, "mremap", m.buf if view is None else view)
            _insert(mm, Mapping(dst, new_len, m.perms, m.name, m.buf, off) if view is None
                    else Mapping(dst, new_len, m.perms, m.name, view))
        else:
            mm.map(dst, new_len, m.perms, m.name)
        return
    pieces = _pieces(mm, addr, addr + old_len)
    first = pieces[0][0]
    if is_shared(first) and first.offset + (addr - first.start) + new_len <= len(first.buf) \
            and all(m.buf is first.buf for m, _lo, _hi in pieces):
        # one shmem/file object: the new range maps the same pages (fork peers still see them)
        _charge(mm, new_len, "mremap", first.buf)
        _insert(mm, Mapping(dst, new_len, first.perms, first.name, first.buf,
                            first.offset + addr - first.start))
    elif is_shared(first) and all(m.buf is first.buf for m, _lo, _hi in pieces) and (
            view := view_again(first.buf, first.offset + addr - first.start, new_len)) is not None:
        # a root file's shared mapping moved and grown: a host mapping of the same file, as
        # long as the new range (pages past the file's end are zero pages, see fs/file.py)
        _charge(mm, new_len, "mremap", view)
        _insert(mm, Mapping(dst, new_len, first.perms, first.name, view))
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
def _lock_range_args(k: "Kernel", task, start, length) -> tuple[int, int] | int:
    """mm/mlock.c do_mlock/munlock: start rounded down, len rounded up over the offset;
    an overflow is EINVAL, any unmapped page in the range ENOMEM (apply_vma_lock_flags)."""
    start = k.arch.untagged_addr(start & _U64)
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
