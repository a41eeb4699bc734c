"""Sealed address ranges (VM_SEALED, mm/mseal.c): the state behind mseal(2) and the question every
call that would change or drop a mapping asks first.

Linux keeps the seal as a flag on each vma; emukern's mappings are windows on host buffers that
map/protect/unmap rebuild freely, so the mm keeps the sealed ranges themselves (``mm.sealed``,
sorted, merged, inherited by fork as dup_mmap copies vm_flags).  A sealed range can never be
unmapped, moved or shrunk, so the list only grows until the mm goes away (exec, exit).  mseal
splits the mappings at the ends of what it seals, as Linux splits the vmas (a sealed vma is
distinct from its unsealed neighbours in /proc/PID/maps), so a mapping is either wholly sealed or
not at all and the per-vma checks below can ask about any address in it.
"""
from __future__ import annotations

from typing import Any

from emukern.kernel.mm.vma import _same_vma
from emukern.machine.memory import Mapping, is_shared

# the madvise advices that throw pages away (is_madv_discard): on a sealed read-only anonymous
# mapping that would be as good as writing zeros into it, so they are refused
MADV_DONTNEED, MADV_FREE, MADV_REMOVE, MADV_DONTFORK = 4, 8, 9, 10
MADV_WIPEONFORK, MADV_DONTNEED_LOCKED = 18, 24
MADV_DISCARDS = frozenset((MADV_DONTNEED, MADV_FREE, MADV_REMOVE, MADV_DONTFORK, MADV_WIPEONFORK,
                           MADV_DONTNEED_LOCKED))


def sealed_ranges(mm: Any) -> list[list[int]]:
    return getattr(mm, "sealed", [])


def range_sealed(mm: Any, start: int, end: int) -> bool:
    """Does any sealed page lie in [start, end)?  What the unmapping paths (munmap, mmap
    MAP_FIXED, mremap's target) check of every vma they would remove."""
    return any(a < end and start < b for a, b in sealed_ranges(mm))


def add_seal(mm: Any, start: int, end: int) -> None:
    """Mark [start, end) sealed (the caller checked it is all mapped), splitting the mappings that
    cross either end so each mapping is wholly sealed or not."""
    split_at(mm, start)
    split_at(mm, end)
    out = sorted([*sealed_ranges(mm), [start, end]])
    merged: list[list[int]] = []
    for a, b in out:
        if merged and merged[-1][1] >= a:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    mm.sealed = merged
    merge_sealed(mm, start, end)


def merge_sealed(mm: Any, start: int, end: int) -> None:
    """vma_modify's merge: the newly sealed mappings join sealed neighbours that are the same
    mapping (same buffer, contiguous, same permissions and name), as Linux merges vmas whose
    flags now agree."""
    out: list[Mapping] = []
    changed = False
    for m in mm.mappings:
        prev = out[-1] if out else None
        if (prev is not None and prev.end >= start and m.start <= end and _same_vma(prev, m)
                and range_sealed(mm, prev.start, prev.start + 1) and range_sealed(mm, m.start, m.start + 1)):
            out[-1] = Mapping(prev.start, prev.size + m.size, prev.perms, prev.name, prev.buf, prev.offset)
            changed = True
            continue
        out.append(m)
    if changed:
        mm.mappings = out
        mm._changed()
        mm.version += 1


def split_at(mm: Any, addr: int) -> None:
    """Cut the mapping that holds addr (not at its start) in two: vma_modify's split."""
    m = mm.find(addr)
    if m is None or m.start == addr:
        return
    i = mm.mappings.index(m)
    lo = Mapping(m.start, addr - m.start, m.perms, m.name, m.buf, m.offset)
    hi = Mapping(addr, m.end - addr, m.perms, m.name, m.buf, m.offset + (addr - m.start))
    for attr, value in vars(m).items():          # whatever the kernel hung on the mapping
        if attr not in ("start", "size", "perms", "name", "buf", "offset"):
            setattr(lo, attr, value)
            setattr(hi, attr, value)
    mm.mappings[i: i + 1] = [lo, hi]
    mm._changed()
    mm.version += 1


def is_ro_anon(m: Mapping) -> bool:
    """A private anonymous mapping the process cannot write: dropping its pages would change
    what it reads, which it could not do itself."""
    anon = not m.name.startswith("file:") and m.name != "elf" and not is_shared(m)
    return anon and "w" not in m.perms


def madvise_refused(mm: Any, start: int, end: int, advice: int) -> bool:
    """can_modify_vma_madv over [start, end): a discarding advice meets a sealed read-only
    anonymous mapping."""
    if advice not in MADV_DISCARDS:
        return False
    return any(is_ro_anon(m) and range_sealed(mm, max(m.start, start), min(m.end, end))
               for m in mm.mappings if m.start < end and start < m.end)
