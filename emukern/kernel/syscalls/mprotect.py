"""mprotect <-> mm/mprotect.c.

``sys_mprotect`` changes a page-aligned range's permissions; PROT_WRITE over a read-only
MAP_SHARED file mapping is EACCES (fs/namei.py's ``shared_readonly_in``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.fs import namei as fs_namei
from emukern.kernel.syscalls import PROT_WRITE, prot_str
from emukern.machine.memory import PAGE

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_mprotect(k: "Kernel", cpu, task, addr, length, prot, *a):
    addr = k.arch.untagged_addr(addr)
    if addr % PAGE:
        return -E.EINVAL
    if prot & PROT_WRITE and fs_namei.shared_readonly_in(task, addr, length):   # kernel/fs/namei.py
        return -E.EACCES
    task.mm.protect(addr, length, prot_str(prot))
    cpu.charge(k.cost.mmap_op)
    return 0
