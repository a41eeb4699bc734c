"""copy_from_user / copy_to_user: the one place syscalls move bytes between user memory and the
kernel, so an architecture can route large copies through its own path (RISC-V: kernel-mode vector,
:mod:`emukern.kernel.riscv.kernel_mode_vector`) exactly where Linux's ``raw_copy_*_user`` does.

A user address that is not mapped raises MemoryFault, which the syscall layer turns into -EFAULT.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from emukern.kernel.kernel import Kernel
    from emukern.kernel.task import Task
    from emukern.machine.cpu_base import Cpu


def copy_from_user(k: "Kernel", cpu: "Cpu", task: "Task", addr: int, n: int) -> bytes:
    """n bytes from user memory; charges the copy (the arch path's cycles, or syscall_per_byte)."""
    if n and k.arch.vector_usercopy is not None:
        got = k.arch.vector_usercopy(cpu, task, addr, n, None)
        if got is not None:
            return got
    data = task.mm.read(addr, n) if n else b""
    cpu.charge(k.cost.syscall_per_byte * len(data))
    return data


def copy_to_user(k: "Kernel", cpu: "Cpu", task: "Task", addr: int, data: bytes) -> None:
    """Write ``data`` to user memory; charges the copy like copy_from_user."""
    if data and k.arch.vector_usercopy is not None:
        if k.arch.vector_usercopy(cpu, task, addr, len(data), data) is not None:
            return
    task.mm.write(addr, data)
    cpu.charge(k.cost.syscall_per_byte * len(data))
