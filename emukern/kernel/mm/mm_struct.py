"""``struct mm_struct``: a process's address space as the kernel keeps it.

The machine's :class:`emukern.machine.memory.AddressSpace` is the memory itself — mappings,
host buffers, the accessors the CPUs and the kernel's user copies go through.  What Linux keeps
beside the VMAs in mm_struct is the kernel's: the heap's bounds (``brk``), where mmap searches
(``mmap_base``, the legacy bottom-up layout), how many tasks share the mm, how far the stack may
grow, the auxv the program started with, and arm64's tagged address ABI.  That lives here.

:class:`MmStruct` *is* an AddressSpace (one base: every user copy reaches the mappings without a
hop, on the hottest path of the kernel) with these fields added; the machine never reads them.
"""
from __future__ import annotations

import mmap
import weakref
from dataclasses import dataclass, field

from emukern.machine.memory import AddressSpace, page_up

MMAP_BASE = 0x3F_0000_0000

# the host buffers of MAP_DROPPABLE mappings (VM_DROPPABLE, Linux 6.11): the kernel may drop their
# pages instead of reclaiming them (they then read as zeros) and a fork child gets them empty
# (VM_WIPEONFORK).  Known by buffer, which every piece of a split mapping shares.
DROPPABLE_BUFS: "weakref.WeakSet[mmap.mmap]" = weakref.WeakSet()


def drop_pages(m, lo: int, hi: int) -> None:
    """Throw away the pages [lo, hi) of droppable mapping m: they read as zeros from now on."""
    off = m.offset + lo - m.start
    m.buf[off: off + hi - lo] = bytes(hi - lo)


@dataclass(eq=False)
class MmStruct(AddressSpace):
    """A process's mm: the machine's address space plus the kernel's bookkeeping."""

    brk_start: int = 0
    brk: int = 0
    mmap_base: int = MMAP_BASE
    # the layout the kernel picked at exec (kernel/mm/layout.py): top-down below mmap_base, or
    # legacy bottom-up from mmap_base up to mmap_end
    bottom_up: bool = False
    mmap_end: int = MMAP_BASE
    users: int = 1              # tasks sharing this mm (threads)
    # where the stack may grow down to (expand_stack), the auxv the program started with
    # (/proc/self/auxv)
    stack_limit: int | None = None
    saved_auxv: list = field(default_factory=list)
    # prctl(PR_SET_MDWE)'s bits (MMF_HAS_MDWE, MMF_HAS_MDWE_NO_INHERIT): memory-deny-write-execute
    mdwe: int = 0
    # prctl(PR_SET_DUMPABLE): 0 keeps unprivileged tracers and pidfd_getfd out (ptrace_may_access)
    dumpable: int = 1
    # mseal(2)'s sealed ranges, [start, end) pairs kept sorted (kernel/mm/seal.py)
    sealed: list = field(default_factory=list)

    @property
    def tagged_addr(self) -> bool:
        """arm64's tagged address ABI is on (kernel/arch/arm64/tagged_addr.py): the kernel's
        accesses ignore a user pointer's top byte, as the hardware's TBI does for the program's
        own — the machine's ``tbi`` switch."""
        return self.tbi

    @tagged_addr.setter
    def tagged_addr(self, on: bool) -> None:
        self.tbi = on

    # ---- get_unmapped_area's search (mm/mmap.c: unmapped_area_topdown / unmapped_area) ----------
    def find_free(self, size: int) -> int:
        """Top-down search below mmap_base, as Linux's default mmap layout does; bottom-up from
        mmap_base in the legacy layout.  Returns an address below PAGE when nothing fits."""
        size = page_up(size)
        if self.bottom_up:
            return self.find_free_bottom_up(size)
        top = self.mmap_base
        for m in sorted(self.mappings, key=lambda x: -x.start):
            if m.start >= top:
                continue
            if m.end <= top - size:
                break
            top = min(top, m.start)
        return top - size

    def find_free_bottom_up(self, size: int) -> int:
        """The lowest free range of ``size`` bytes in [mmap_base, mmap_end) (0 if none)."""
        lo = self.mmap_base
        for m in self.mappings:                      # sorted by start
            if m.end <= lo:
                continue
            if m.start >= lo + size:
                break
            lo = m.end
        return lo if lo + size <= self.mmap_end else 0

    def fork(self) -> "MmStruct":
        """dup_mm: the machine copies the mappings (dup_mmap); the kernel's fields come along."""
        child = super().fork()
        assert isinstance(child, MmStruct)
        child.brk_start, child.brk = self.brk_start, self.brk
        child.mmap_base, child.bottom_up, child.mmap_end = self.mmap_base, self.bottom_up, self.mmap_end
        child.mdwe = mmf_init_mdwe(self.mdwe)
        child.dumpable = self.dumpable          # (mmf_init_flags keeps MMF_DUMPABLE_MASK)
        child.sealed = [list(r) for r in self.sealed]   # dup_mmap copies VM_SEALED
        for mine, theirs in zip(self.mappings, child.mappings):
            if mine.buf in DROPPABLE_BUFS:      # VM_WIPEONFORK: the child starts with zeros
                DROPPABLE_BUFS.add(theirs.buf)
                drop_pages(theirs, theirs.start, theirs.end)
        return child


MDWE_REFUSE_EXEC_GAIN, MDWE_NO_INHERIT = 1, 2       # PR_MDWE_* (the prctl's bits)


def mmf_init_mdwe(bits: int) -> int:
    """mmf_init_flags: a new mm (fork's copy, execve's fresh one) keeps the parent's MDWE unless
    it was set with PR_MDWE_NO_INHERIT."""
    return 0 if bits & MDWE_NO_INHERIT else bits


def map_deny_write_exec(mm: MmStruct, old_perms: str | None, new_prot: int) -> bool:
    """mm/mman.h map_deny_write_exec: under MDWE a mapping may not be writable and executable
    at once, and an existing mapping that is not executable may not become so (``old_perms``
    None: a new mapping, which may start executable)."""
    if not mm.mdwe & MDWE_REFUSE_EXEC_GAIN or not new_prot & 4:      # PROT_EXEC
        return False
    return bool(new_prot & 2) or (old_perms is not None and "x" not in old_perms)
