"""madvise <-> mm/madvise.c, and mincore <-> mm/mincore.c.

``sys_madvise`` only checks the start's alignment: every advice is accepted and has no effect.
``sys_mincore`` reports every mapped page as resident (emukern has no paging) up to the first
hole, which is ENOMEM.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.mm.vma import _U64
from emukern.machine.memory import PAGE, page_up
from emukern.kernel.mm.uaccess import copy_to_user

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_madvise(k: "Kernel", cpu, task, addr, length, advice, *a):
    return 0 if k.arch.untagged_addr(addr) % PAGE == 0 else -E.EINVAL


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
