"""madvise <-> mm/madvise.c, and mincore <-> mm/mincore.c.

``sys_madvise`` checks what do_madvise checks -- an advice Linux 6.12 knows (with KSM, THP and
memory-failure configured, as Debian's kernels are), the start's alignment, a length that does
not wrap -- and answers ENOMEM when the range is not all mapped (madvise_walk_vmas); an accepted
advice has no effect (emukern has no paging; MADV_HWPOISON/SOFT_OFFLINE inject nothing).
``sys_mincore`` reports every mapped page as resident (emukern has no paging) up to the first
hole, which is ENOMEM.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.signal.defs import s32
from emukern.kernel.mm import seal as mm_seal
from emukern.kernel.mm.mm_struct import DROPPABLE_BUFS, drop_pages as mm_droppable_drop
from emukern.kernel.mm.vma import _U64
from emukern.machine.memory import PAGE, page_up
from emukern.kernel.mm.uaccess import copy_to_user

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


# madvise_behavior_valid: NORMAL..DONTNEED, FREE..DODUMP's run (8-17), WIPEONFORK..
# DONTNEED_LOCKED (18-24), COLLAPSE (25), HWPOISON and SOFT_OFFLINE (100, 101)
MADV_DODUMP, MADV_KEEPONFORK, MADV_PAGEOUT = 17, 19, 21
MADV_VALID = frozenset((0, 1, 2, 3, 4, *range(8, 26), 100, 101))
_U64_MASK = (1 << 64) - 1


def sys_madvise(k: "Kernel", cpu, task, addr, length, advice, *a):
    if s32(advice) not in MADV_VALID:
        return -E.EINVAL
    addr = k.arch.untagged_addr(addr & _U64_MASK)
    length &= _U64_MASK
    if addr % PAGE:
        return -E.EINVAL
    end = addr + page_up(length)
    if (length and end == addr) or end > _U64_MASK:
        return -E.EINVAL            # the length rounded up past the top
    if end == addr:
        return 0
    if mm_seal.madvise_refused(task.mm, addr, end, s32(advice)):
        return -E.EPERM             # discarding a sealed read-only anonymous vma's pages
    # madvise_walk_vmas: the mapped parts get the advice, a hole anywhere makes it ENOMEM
    hit = [m for m in task.mm.mappings if m.start < end and addr < m.end]
    droppable = [m for m in hit if m.buf in DROPPABLE_BUFS]
    if droppable and s32(advice) in (MADV_DODUMP, MADV_KEEPONFORK):
        return -E.EINVAL            # a droppable vma is always left out of dumps and forks
    if s32(advice) == MADV_PAGEOUT:
        for m in droppable:         # reclaim drops such pages rather than writing them out
            mm_droppable_drop(m, max(m.start, addr), min(m.end, end))
    covered = sum(min(m.end, end) - max(m.start, addr) for m in hit)
    return 0 if covered == end - addr else -E.ENOMEM


def sys_mincore(k: "Kernel", cpu, task, start, length, vec, *a):
    """mm/mincore.c: start unaligned: EINVAL; the range past TASK_SIZE: ENOMEM; one byte per
    page with bit 0 set (every mapped page is resident here) up to the first hole, which is
    ENOMEM; a vector the task cannot write: EFAULT."""
    cpu.charge(k.cost.mmap_op)
    start = k.arch.untagged_addr(start & _U64)
    length &= _U64
    if start % PAGE:
        return -E.EINVAL
    if length > (1 << 64) - start or start + length > k.arch.STACK_TOP:
        return -E.ENOMEM
    pages = page_up(length) // PAGE
    mm = task.mm
    out = bytearray()
    for i in range(pages):
        if mm.find(start + i * PAGE) is None:
            break
        out.append(1)
    if out:
        got = copy_to_user(k, cpu, task, vec, bytes(out))
        if isinstance(got, int) and got < 0:
            return got
    return -E.ENOMEM if len(out) < pages else 0
