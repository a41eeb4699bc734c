"""Where a new image's mmap area goes (mm/util.c ``arch_pick_mmap_layout``).

Linux picks one of two layouts at exec, from the stack rlimit the exec started with:

* top-down (the default): ``mmap_base`` sits a gap below the stack top — the stack rlimit plus a
  guard, at least 128 MiB (MIN_GAP) and at most 5/6 of the address space (MAX_GAP) — and mmap
  hands out the highest free range below it (``arch_get_unmapped_area_topdown``);
* legacy bottom-up (``mmap_is_legacy``: the ADDR_COMPAT_LAYOUT personality, an RLIMIT_STACK of
  RLIM_INFINITY, or the vm.legacy_va_layout sysctl): ``mmap_base`` is TASK_UNMAPPED_BASE and mmap
  hands out the lowest free range above it (``generic_get_unmapped_area``).  An unlimited stack
  can grow without bound, so no gap below it could be reserved: the mmaps go low instead.

emukern's user address space is 256 GiB on both architectures (the stack top is just below
1 << 38, machine-owned pages above), i.e. riscv64's Sv39 TASK_SIZE.  TASK_UNMAPPED_BASE follows
each architecture's definition over that size: riscv64 ``PAGE_ALIGN(TASK_SIZE / 3)``, arm64
``PAGE_ALIGN(DEFAULT_MAP_WINDOW / 4)``.  The top-down base keeps emukern's long-standing
placement (256 MiB below the lowest address the stack may grow to), which the default 8 MiB
rlimit gives; a larger finite rlimit moves it down by as much, up to MAX_GAP, as Linux's gap does.
"""
from __future__ import annotations

from typing import Any

from emukern.kernel.resource import RLIM_INFINITY, RLIMIT_STACK, rlimit
from emukern.machine.memory import PAGE, page_up

TASK_SIZE = 1 << 38                 # emukern's user address space (riscv64 Sv39's TASK_SIZE)
TOPDOWN_PAD = 0x1000_0000           # emukern's gap between the stack's growth limit and mmap_base
MAX_GAP = TASK_SIZE // 6 * 5        # mm/util.c MAX_GAP


def task_unmapped_base(arch: str) -> int:
    """TASK_UNMAPPED_BASE: where the legacy layout's mmaps start."""
    if arch == "riscv64":
        return page_up(TASK_SIZE // 3)          # arch/riscv/include/asm/processor.h
    return page_up(TASK_SIZE // 4)              # arch/arm64/include/asm/processor.h


def mmap_is_legacy(rlim_stack: int, legacy_va_layout: int = 0) -> bool:
    """mm/util.c mmap_is_legacy (emukern has no personality(2), so ADDR_COMPAT_LAYOUT is never
    set, and no vm.legacy_va_layout sysctl: it reads as its default 0)."""
    return rlim_stack == RLIM_INFINITY or bool(legacy_va_layout)


def stack_gap(rlim_stack: int) -> int:
    """How far the stack may grow below its top: the rlimit, capped as Linux caps mmap_base's gap
    (MAX_GAP) so an unlimited or huge limit still leaves room for everything else."""
    return min(page_up(rlim_stack) if rlim_stack < RLIM_INFINITY else MAX_GAP, MAX_GAP)


def topdown_base(stack_top: int, rlim_stack: int) -> int:
    """mmap_base() for the top-down layout (emukern's placement, see the module docstring)."""
    return (stack_top - stack_gap(rlim_stack) - TOPDOWN_PAD) & ~(PAGE - 1)


def arch_pick_mmap_layout(k: Any, task: Any, mm: Any, stack_top: int) -> None:
    """Choose the new mm's layout from the exec's RLIMIT_STACK: sets ``mm.mmap_base``,
    ``mm.mmap_end`` (the highest address a bottom-up search may use) and ``mm.bottom_up``."""
    rlim_stack = rlimit(k, task, RLIMIT_STACK)
    top = topdown_base(stack_top, rlim_stack)
    # a bottom-up search may go up to the default layout's base: what lies above is the stack's
    # first 8 MiB and the sigreturn page (an unlimited stack grows past that only into free space)
    mm.mmap_end = topdown_base(stack_top, k.arch.STACK_SIZE)
    if mmap_is_legacy(rlim_stack):
        mm.bottom_up = True
        mm.mmap_base = task_unmapped_base(k.config.arch)
    else:
        mm.bottom_up = False
        mm.mmap_base = top
