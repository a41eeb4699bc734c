"""mremap <-> mm/mremap.c (SYSCALL_DEFINE5(mremap), mremap_to, vma_to_resize, move_vma).

glibc's realloc of a chunk it got from mmap (128 KiB and up by default) is mremap with
MREMAP_MAYMOVE; allocators and runtimes use it to grow arrays without a copy.

How it maps onto emukern's address space (emukern/machine/memory.py):
- a move is AddressSpace.move: the pages go with their host buffers (nothing copied; a
  MAP_SHARED mapping stays shared with the processes it was forked into), and the CPUs resync
  their views from the mm's version (code in a moved executable mapping keeps running);
- growing a private anonymous mapping adds zero-filled anonymous pages after the old end (in
  place when the space after it is free, else at the new place);
- emukern keeps no file offset per mapping and no shmem object that could grow, so growing a
  file-backed or MAP_SHARED mapping is -ENOMEM here (shrinking and same-size moves of them work):
  Linux may answer ENOMEM to any mremap that cannot fit, so callers handle it, but a real kernel
  would have grown these.
- "one vma": adjacent mappings with the same permissions and name count as one region (Linux
  merges such anonymous vmas), so [addr, addr+old_len) may span them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.machine.memory import PAGE, SHARED_PREFIX, OutOfMemory, page_up

if TYPE_CHECKING:
    from emukern.kernel.task import Task

MREMAP_SYSCALL_NAMES = {216: "mremap", 227: "msync"}
MS_ASYNC, MS_INVALIDATE, MS_SYNC = 1, 2, 4

MREMAP_MAYMOVE, MREMAP_FIXED, MREMAP_DONTUNMAP = 1, 2, 4
ANON_NAMES = ("[anon]", "[heap]")


def _region(mm: Any, addr: int) -> tuple[int, int, str, str] | None:
    """The vma holding ``addr``: (start, end, perms, name), adjacent mappings of the same
    permissions and name joined, or None when ``addr`` is not mapped."""
    ms = sorted(mm.mappings, key=lambda m: m.start)
    i = next((k for k, m in enumerate(ms) if m.start <= addr < m.end), None)
    if i is None:
        return None
    m = ms[i]
    start, end = m.start, m.end
    j = i
    while j > 0 and ms[j - 1].end == start and ms[j - 1].perms == m.perms and ms[j - 1].name == m.name:
        j -= 1
        start = ms[j].start
    j = i
    while j + 1 < len(ms) and ms[j + 1].start == end and ms[j + 1].perms == m.perms and ms[j + 1].name == m.name:
        j += 1
        end = ms[j].end
    return start, end, m.perms, m.name


class MremapMixin:
    """mremap; mixed into the kernel."""

    cost: Any
    arch: Any

    if TYPE_CHECKING:
        def get_unmapped_area(self, mm: Any, addr: int, size: int) -> int: ...

    def sys_mremap(self, cpu, task, addr, old_len, new_len, flags, new_addr, *a):
        cpu.charge(self.cost.mmap_op)
        mm = task.mm
        if flags & ~(MREMAP_FIXED | MREMAP_MAYMOVE | MREMAP_DONTUNMAP):
            return -E.EINVAL
        if flags & (MREMAP_FIXED | MREMAP_DONTUNMAP) and not flags & MREMAP_MAYMOVE:
            return -E.EINVAL
        if flags & MREMAP_DONTUNMAP and old_len != new_len:
            return -E.EINVAL
        addr = self.arch.untagged_addr(addr)
        if addr % PAGE:
            return -E.EINVAL
        old_len, new_len = page_up(old_len), page_up(new_len)
        if not new_len or new_len > 1 << 40:    # (a zero new length is nonsensical)
            return -E.EINVAL if not new_len else -E.ENOMEM
        reg = _region(mm, addr)                 # vma_lookup
        if reg is None:
            return -E.EFAULT
        if flags & (MREMAP_FIXED | MREMAP_DONTUNMAP):
            return self._mremap_to(task, mm, addr, old_len, new_len, flags, self.arch.untagged_addr(new_addr))
        if old_len >= new_len:                  # always allowed: unmap the tail
            if old_len != new_len:
                mm.unmap(addr + new_len, old_len - new_len)
            return addr
        got = self._vma_to_resize(mm, addr, old_len, new_len)
        if isinstance(got, int):
            return got
        start, end, perms, name = got
        if addr + old_len == end:               # old_len reaches the end of the vma: expand?
            limit = getattr(mm, "stack_limit", None) or self.arch.STACK_TOP
            if end + (new_len - old_len) <= limit and not mm.overlaps(end, new_len - old_len):
                return self._grow(mm, addr, old_len, new_len, perms, addr)
        if not flags & MREMAP_MAYMOVE:
            return -E.ENOMEM
        dest = self.get_unmapped_area(mm, 0, new_len)
        if dest < PAGE:
            return -E.ENOMEM
        return self._move(mm, addr, old_len, new_len, perms, dest, dontunmap=False)

    def sys_msync(self, cpu, task, start, length, flags, *a):
        """msync (mm/msync.c): EINVAL for unknown flags, MS_ASYNC with MS_SYNC, or an unaligned
        start; ENOMEM when part of the range is not mapped.  Nothing to write back: a MAP_SHARED
        file mapping is read-only here and anonymous memory has no backing store."""
        start = self.arch.untagged_addr(start)
        if flags & ~(MS_ASYNC | MS_INVALIDATE | MS_SYNC) or start % PAGE:
            return -E.EINVAL
        if flags & MS_ASYNC and flags & MS_SYNC:
            return -E.EINVAL
        length = page_up(length)
        cpu.charge(self.cost.syscall_body)
        if not length:
            return 0
        pos, end = start, start + length
        for m in sorted(task.mm.mappings, key=lambda m: m.start):
            if m.end <= pos:
                continue
            if m.start > pos or pos >= end:
                break
            pos = m.end
        return 0 if pos >= end else -E.ENOMEM

    def _vma_to_resize(self, mm, addr: int, old_len: int, new_len: int) -> tuple[int, int, str, str] | int:
        """vma_to_resize: the old range inside one vma (EFAULT), a zero old length only for a
        shared mapping (EINVAL), and growth emukern can give (see the module docstring)."""
        reg = _region(mm, addr)
        if reg is None:
            return -E.EFAULT
        start, end, perms, name = reg
        if old_len > end - addr:
            return -E.EFAULT                    # we can't remap across vm area boundaries
        shared = name.startswith(SHARED_PREFIX)
        if not old_len and not shared:
            return -E.EINVAL
        if not old_len:                         # "duplicate shm area": emukern has no shmem object
            return -E.ENOMEM
        if new_len > old_len and name not in ANON_NAMES:
            return -E.ENOMEM                    # file-backed or shared: not growable here
        return reg

    def _mremap_to(self, task, mm, addr: int, old_len: int, new_len: int, flags: int, new_addr: int) -> int:
        """mremap_to: MREMAP_FIXED (the target's old contents unmapped) or MREMAP_DONTUNMAP
        (new_addr a hint; the old range stays mapped, empty)."""
        if flags & MREMAP_FIXED:
            if new_addr % PAGE:
                return -E.EINVAL
            if new_len > self.arch.STACK_TOP or new_addr > self.arch.STACK_TOP - new_len:
                return -E.EINVAL
            if addr + old_len > new_addr and new_addr + new_len > addr:
                return -E.EINVAL                # old and new may not overlap
            mm.unmap(new_addr, new_len)
        if old_len > new_len:
            mm.unmap(addr + new_len, old_len - new_len)
            old_len = new_len
        got = self._vma_to_resize(mm, addr, old_len, new_len)
        if isinstance(got, int):
            return got
        perms, name = got[2], got[3]
        if flags & MREMAP_DONTUNMAP and name not in ANON_NAMES:
            return -E.EINVAL                    # (private anonymous only, as Linux 5.7-5.12;
            #                                     later kernels also take shmem and file maps)
        if flags & MREMAP_FIXED:
            dest = new_addr
        else:
            dest = self.get_unmapped_area(mm, new_addr, new_len)
            if dest < PAGE:
                return -E.ENOMEM
        return self._move(mm, addr, old_len, new_len, perms, dest, dontunmap=bool(flags & MREMAP_DONTUNMAP))

    def _grow(self, mm, addr: int, old_len: int, new_len: int, perms: str, at: int) -> int:
        try:
            mm.map(at + old_len, new_len - old_len, perms, "[anon]")
        except OutOfMemory:
            return -E.ENOMEM
        return at

    def _move(self, mm, addr: int, old_len: int, new_len: int, perms: str, dest: int, dontunmap: bool) -> int:
        """move_vma: the pages go to ``dest`` (then the growth after them); with DONTUNMAP the
        old range is left mapped and empty (its next touch faults in zero pages)."""
        name = _region(mm, addr)[3]                                   # type: ignore[index]
        mm.move(addr, old_len, dest)
        if dontunmap:
            try:
                mm.map(addr, old_len, perms, name)
            except OutOfMemory:
                mm.move(dest, old_len, addr)
                return -E.ENOMEM
        if new_len > old_len:
            got = self._grow(mm, dest, old_len, new_len, perms, dest)
            if got < 0:
                mm.move(dest, old_len, addr)
                return got
        return dest
