"""msync <-> mm/msync.c.

``sys_msync`` checks flags and alignment, returns ENOMEM for unmapped pages in the range and
EBUSY for MS_INVALIDATE over a locked range; no data is written anywhere, as emukern's shared
file mappings are copies of the file.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.mm.vma import _U64, MS_ASYNC, MS_INVALIDATE, MS_SYNC, _fully_mapped, _locked, _pieces
from emukern.machine.memory import PAGE, page_up

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


# ---- msync / mincore -------------------------------------------------------------------
def sys_msync(k: "Kernel", cpu, task, start, length, flags, *a):
    """mm/msync.c: bad flags or MS_ASYNC with MS_SYNC, or an unaligned start: EINVAL; an
    unmapped page in the range: ENOMEM (after the mapped parts); MS_INVALIDATE of a locked
    range: EBUSY.  The data is written nowhere: emukern's shared file mappings are
    read-only and anonymous memory has no backing store."""
    cpu.charge(k.cost.mmap_op)
    start = k.arch.untagged_addr(start & _U64)
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
