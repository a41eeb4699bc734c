"""madvise <-> mm/madvise.c, and mincore <-> mm/mincore.c.

``sys_madvise`` checks what do_madvise checks -- an advice Linux 6.12 knows (with KSM, THP and
memory-failure configured, as Debian's kernels are), the start's alignment, a length that does
not wrap -- and answers ENOMEM when the range is not all mapped (madvise_walk_vmas).  The
advices that change what a page holds or whether it is there act:

- MADV_DONTNEED / MADV_DONTNEED_LOCKED drop the pages of private anonymous memory (it reads as
  zero again and leaves Rss); a VM_LOCKED vma refuses plain DONTNEED with EINVAL.  A private
  file mapping keeps its bytes (emukern holds the file's bytes in the mapping itself, so there
  is no file to read them back from), and a shared one keeps them as shmem does.
- MADV_POPULATE_READ / MADV_POPULATE_WRITE (madvise_populate) fault the range in: a read maps
  the zero page of untouched anonymous memory, a write gives each page its own memory; a
  mapping without the access is EINVAL, a hole ENOMEM after the pages before it.

Residency is the host's: guest memory is host memory, so emukern asks the host which pages
of the buffer behind a mapping are there (machine/memory.py ``page_states``) and drops or
faults them with the host's own madvise.  The other advices have no effect (emukern has no
paging; MADV_HWPOISON/SOFT_OFFLINE inject nothing).

``sys_mincore`` reports a page as resident when a page is mapped there or, for a shared file,
held in memory, up to the first hole, which is ENOMEM.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.signal.defs import s32
from emukern.kernel.mm import seal as mm_seal
from emukern.kernel.mm.mm_struct import DROPPABLE_BUFS, drop_pages as mm_droppable_drop
from emukern.kernel.mm.vma import _U64, VM_LOCKED, _pieces, lock_segments, lock_sync
from emukern.machine.memory import PAGE, PAGE_NONE, discard, is_shared, page_states, page_up, populate
from emukern.kernel.mm.uaccess import copy_to_user

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


# madvise_behavior_valid: NORMAL..DONTNEED, FREE..DODUMP's run (8-17), WIPEONFORK..
# DONTNEED_LOCKED (18-24), COLLAPSE (25), HWPOISON and SOFT_OFFLINE (100, 101)
MADV_DODUMP, MADV_KEEPONFORK, MADV_PAGEOUT = 17, 19, 21
MADV_VALID = frozenset((0, 1, 2, 3, 4, *range(8, 26), 100, 101))
MADV_DONTNEED, MADV_POPULATE_READ, MADV_POPULATE_WRITE, MADV_DONTNEED_LOCKED = 4, 22, 23, 24
_U64_MASK = (1 << 64) - 1
# the mappings whose pages are anonymous memory of their own (a private mapping of /dev/zero is
# anonymous memory that names the file)
ANON_PRIVATE = frozenset(("[anon]", "[heap]", "[stack]", "file:/dev/zero"))


def sys_madvise(k: "Kernel", cpu, task, addr, length, advice, *a):
    advice = s32(advice)
    if advice not in MADV_VALID:
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
    if advice in (MADV_POPULATE_READ, MADV_POPULATE_WRITE):
        return madvise_populate(task.mm, addr, end, advice == MADV_POPULATE_WRITE)
    pieces = _pieces(task.mm, addr, end)
    droppable = [m for m, _lo, _hi in pieces if m.buf in DROPPABLE_BUFS]
    if droppable and s32(advice) in (MADV_DODUMP, MADV_KEEPONFORK):
        return -E.EINVAL            # a droppable vma is always left out of dumps and forks
    if s32(advice) == MADV_PAGEOUT:
        for m in droppable:         # reclaim drops such pages rather than writing them out
            mm_droppable_drop(m, max(m.start, addr), min(m.end, end))
    if advice in (MADV_DONTNEED, MADV_DONTNEED_LOCKED):
        err = madvise_dontneed(task.mm, pieces, advice == MADV_DONTNEED)
        if err:
            return err
    # madvise_walk_vmas: the mapped parts get the advice, a hole anywhere makes it ENOMEM
    covered = sum(hi - lo for _m, lo, hi in pieces)
    return 0 if covered == end - addr else -E.ENOMEM


def madvise_dontneed(mm, pieces, refuse_locked: bool) -> int:
    """madvise_dontneed_free over the mapped pieces, in address order: a locked vma stops the
    walk with EINVAL for plain MADV_DONTNEED (madvise_dontneed_free_valid_vma)."""
    for m, lo, hi in pieces:
        if refuse_locked and any(fl & VM_LOCKED and a < hi and lo < b
                                 for a, b, fl in lock_segments(mm, m)):
            return -E.EINVAL
        if m.name in ANON_PRIVATE and not is_shared(m):
            discard(m, lo, hi)
    return 0


def madvise_populate(mm, start: int, end: int, write: bool) -> int:
    """madvise_populate: fault [start, end) in, vma by vma.  A hole is ENOMEM (vma_lookup
    fails) and a vma without the access asked for EINVAL (check_vma_flags), each after the
    pages before it came in."""
    cur = start
    while cur < end:
        m = mm.find(cur)
        if m is None:
            return -E.ENOMEM
        need = "w" if write else "r"
        if need not in m.perms:
            return -E.EINVAL
        hi = min(end, m.end)
        populate(m, cur, hi, write)
        cur = hi
    return 0


def sys_mincore(k: "Kernel", cpu, task, start, length, vec, *a):
    """mm/mincore.c: start unaligned: EINVAL; the range past TASK_SIZE: ENOMEM; one byte per
    page, bit 0 set when the page is in memory, up to the first hole, which is ENOMEM; a
    vector the task cannot write: EFAULT."""
    cpu.charge(k.cost.mmap_op)
    start = k.arch.untagged_addr(start & _U64)
    length &= _U64
    if start % PAGE:
        return -E.EINVAL
    if length > (1 << 64) - start or start + length > k.arch.STACK_TOP:
        return -E.ENOMEM
    pages = page_up(length) // PAGE
    mm = task.mm
    lock_sync(mm)
    out = bytearray()
    cur, end = start, start + pages * PAGE
    while cur < end:
        m = mm.find(cur)
        if m is None:
            break
        hi = min(end, m.end)
        states = page_states(m, cur, hi)
        if states is None:              # the host does not tell: every mapped page is there
            out += b"\x01" * ((hi - cur) // PAGE)
        else:
            out += bytes(0 if s == PAGE_NONE else 1 for s in states)
        cur = hi
    if out:
        got = copy_to_user(k, cpu, task, vec, bytes(out))
        if isinstance(got, int) and got < 0:
            return got
    return -E.ENOMEM if len(out) < pages else 0
