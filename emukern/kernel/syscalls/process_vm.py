"""process_vm_readv / process_vm_writev <-> mm/process_vm_access.c.

Thin entries into ``process_vm_rw`` in kernel/process_vm.py, imported at call time.
"""
from __future__ import annotations

from typing import TYPE_CHECKING
from emukern.kernel.process_vm import process_vm_rw

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_process_vm_readv(k: "Kernel", cpu, task, pid, lvec, liovcnt, rvec, riovcnt, flags, *a):
    return process_vm_rw(k, cpu, task, pid, lvec, liovcnt, rvec, riovcnt, flags, write=False)


def sys_process_vm_writev(k: "Kernel", cpu, task, pid, lvec, liovcnt, rvec, riovcnt, flags, *a):
    return process_vm_rw(k, cpu, task, pid, lvec, liovcnt, rvec, riovcnt, flags, write=True)
