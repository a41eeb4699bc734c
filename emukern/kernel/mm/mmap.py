"""The address-space searches of mm/mmap.c: ``get_unmapped_area`` and ``expand_stack``.

``get_unmapped_area`` takes a page-aligned hint when the whole range is free and above
mmap_min_addr, else asks the mm's layout search (top-down, or bottom-up in the legacy layout);
``expand_stack`` grows the [stack] mapping down to a faulting address within RLIMIT_STACK.
The syscalls that use them live in kernel/syscalls/mmap.py and mremap.py.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel.task import Task
from emukern.machine.memory import OutOfMemory, page_up
from emukern.machine.memory import page_down

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def get_unmapped_area(k: "Kernel", mm, addr: int, size: int) -> int:
    """mm/mmap.c get_unmapped_area: a hint (page-aligned up) is taken when the whole range is
    free, at or above mmap_min_addr (64 KiB) and below where the stack may grow; otherwise
    the layout's search (top-down, or bottom-up in the legacy layout: kernel/mm/layout.py)."""
    if addr:
        hint = page_up(addr)
        limit = getattr(mm, "stack_limit", k.arch.STACK_TOP)
        if 0x10000 <= hint and hint + size <= limit and not mm.overlaps(hint, size):
            return hint
    return mm.find_free(size)


def expand_stack(k: "Kernel", task: Task, addr: int) -> bool:
    """Grow the [stack] mapping down to cover ``addr`` if it is within the stack rlimit."""
    mm = task.mm
    limit = mm.stack_limit
    stack = next((m for m in mm.mappings if m.name == "[stack]"), None)
    if limit is None or stack is None or not limit <= addr < stack.start:
        return False
    start = page_down(addr)
    if mm.overlaps(start, stack.start - start):
        return False
    try:
        mm.map(start, stack.start - start, "rw-", "[stack]")
    except OutOfMemory:
        return False        # no memory to grow into: the fault stands (SIGSEGV), as in Linux
    return True
