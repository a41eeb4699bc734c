"""mprotect <-> mm/mprotect.c.

``sys_mprotect`` is do_mprotect_pkey: it changes a page-aligned range's permissions one mapping
after another.  Unknown prot bits (the arch's ``arch_validate_prot``) and PROT_GROWSDOWN with
PROT_GROWSUP are EINVAL; a range that starts in a hole, or runs into one, is ENOMEM -- the
mappings before the hole keep their new permissions, as in Linux.  PROT_GROWSDOWN extends the
range down to the start of a [stack] mapping (the one VM_GROWSDOWN mapping emukern has).
PROT_WRITE over a read-only MAP_SHARED file mapping is EACCES (fs/namei.py's
``shared_readonly_in``), with the mappings before it already changed.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel.mm import seal as mm_seal
from emukern.kernel.mm import vma as mm_vma
from emukern.kernel.mm.mm_struct import map_deny_write_exec
from emukern.kernel import errno as E
from emukern.kernel.fs import namei as fs_namei
from emukern.kernel.syscalls import PROT_WRITE, prot_str
from emukern.machine.memory import PAGE, page_up

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

PROT_GROWSDOWN, PROT_GROWSUP = 0x01000000, 0x02000000
_U64 = (1 << 64) - 1


def sys_mprotect(k: "Kernel", cpu, task, addr, length, prot, *a):
    addr = k.arch.untagged_addr(addr & _U64)
    length &= _U64
    prot &= 0xFFFFFFFF
    grows = prot & (PROT_GROWSDOWN | PROT_GROWSUP)
    prot &= ~grows
    if grows == PROT_GROWSDOWN | PROT_GROWSUP or addr % PAGE:
        return -E.EINVAL
    cpu.charge(k.cost.mmap_op)
    if not length:
        return 0
    end = addr + page_up(length)
    if end > _U64 or end <= addr:
        return -E.ENOMEM
    if not k.arch.arch_validate_prot(prot):
        return -E.EINVAL
    mm = task.mm
    # the mappings the range meets, in address order (vma_find, then for_each_vma_range)
    vmas = [m for m in mm.mappings if m.start < end and addr < m.end]
    if not vmas:
        return -E.ENOMEM
    first = vmas[0]
    if grows & PROT_GROWSDOWN:
        if first.name != "[stack]":
            return -E.EINVAL
        addr = first.start          # the whole grown-down part goes with it
        for m in reversed([m for m in mm.mappings if m.end <= addr]):
            if m.end != addr or m.name != "[stack]":
                break
            addr = m.start
        vmas = [m for m in mm.mappings if m.start < end and addr < m.end]
    elif first.start > addr:
        return -E.ENOMEM
    elif grows & PROT_GROWSUP:
        return -E.EINVAL            # no mapping grows up on arm64 or riscv
    # walk: stop at a hole (ENOMEM) or at a mapping that may not become writable (EACCES);
    # what lies before the stop keeps the new protection
    done, err = addr, 0
    for m in vmas:
        if m.start > done:
            err = -E.ENOMEM
            break
        lo, hi = max(m.start, addr), min(m.end, end)
        if prot & PROT_WRITE and m.buf not in mm_vma.SHARED_MAYWRITE and \
                fs_namei.shared_readonly_in(task, lo, hi - lo):
            err = -E.EACCES
            break
        if map_deny_write_exec(mm, m.perms, prot):
            err = -E.EACCES         # MDWE: no write+exec, no exec gained
            break
        if mm_seal.range_sealed(mm, lo, hi):
            err = -E.EPERM          # mprotect_fixup: a sealed vma keeps its protection
            break
        done = min(m.end, end)
    if not err and done < end:
        err = -E.ENOMEM
    if done > addr:
        mm.protect(addr, done - addr, prot_str(prot))
    return err
