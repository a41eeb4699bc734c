"""msync <-> mm/msync.c.

``sys_msync`` checks flags and alignment, returns ENOMEM for unmapped pages in the range and
EBUSY for MS_INVALIDATE over a locked range.  MS_SYNC over a shared mapping of a root file
writes its pages to the host file (the host's msync: Linux's vfs_fsync_range of the file);
MS_ASYNC does nothing, as Linux since 2.6.19 (the pages are the page cache's already), and so
does MS_INVALIDATE (every mapping and read() see one set of pages: nothing to invalidate).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.mm.vma import _U64, MS_ASYNC, MS_INVALIDATE, MS_SYNC, _fully_mapped, _locked, _pieces
from emukern.kernel.fs.file import file_view
from emukern.machine.memory import PAGE, is_shared, page_up

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


# ---- msync / mincore -------------------------------------------------------------------
def sys_msync(k: "Kernel", cpu, task, start, length, flags, *a):
    """mm/msync.c: bad flags or MS_ASYNC with MS_SYNC, or an unaligned start: EINVAL; an
    unmapped page in the range: ENOMEM (after the mapped parts); MS_INVALIDATE of a locked
    range: EBUSY.  MS_SYNC writes a root file's shared mapping back to the host file;
    anonymous memory, shmem and private copies have no backing store to write."""
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
    if flags & MS_SYNC:
        for m, lo, hi in _pieces(mm, start, end):
            if is_shared(m) and file_view(m.buf) is not None and not m.buf.closed:
                try:
                    m.buf.flush(m.offset + lo - m.start, hi - lo)
                except OSError as e:
                    return -(e.errno or E.EIO)      # the host's writeback failed
    return -E.ENOMEM if unmapped else 0
