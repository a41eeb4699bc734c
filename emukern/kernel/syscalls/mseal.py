"""mseal <-> mm/mseal.c (Linux 6.10+, as 6.12 has it).

``sys_mseal`` seals a page-aligned, wholly mapped range: from then on the mappings in it may not
be unmapped, moved, shrunk or grown by mremap, replaced by mmap(MAP_FIXED), given new protections,
or (when read-only and anonymous) have their pages discarded by madvise -- each of those calls
fails with EPERM (the checks sit in mmap.py, mremap.py, mprotect.py and madvise.py, asking
kernel/mm/seal.py).  Flags are reserved (EINVAL unless 0); the length is rounded up to pages and a
length that wraps is EINVAL; a hole anywhere in the range is ENOMEM, and then nothing is sealed.
Sealing twice is allowed.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.mm import seal as mm_seal
from emukern.kernel.mm.vma import _U64, _fully_mapped
from emukern.machine.memory import PAGE, page_up

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_mseal(k: "Kernel", cpu, task, start, length, flags, *a):
    cpu.charge(k.cost.mmap_op)
    if flags:
        return -E.EINVAL
    start = k.arch.untagged_addr(start & _U64)
    length &= _U64
    if start % PAGE:
        return -E.EINVAL
    size = page_up(length) & _U64
    if length and not size:
        return -E.EINVAL            # a "negative" length rounded up to zero
    end = start + size
    if end > _U64:
        return -E.EINVAL
    if end == start:
        return 0
    mm = task.mm
    if not _fully_mapped(mm, start, end):
        return -E.ENOMEM            # check_mm_seal: every page must be mapped before any is sealed
    mm_seal.add_seal(mm, start, end)
    return 0
