"""memfd_secret <-> mm/secretmem.c.

``sys_memfd_secret`` returns a new secretmem file (kernel/mm/secretmem.py): O_CLOEXEC is the
only flag Linux 6.12 accepts (its SECRETMEM_MODE_MASK is empty), anything else is EINVAL.
secretmem is enabled, as on Debian's kernels (CONFIG_SECRETMEM=y, secretmem.enable's default),
so the call is never ENOSYS here.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.mm.secretmem import secretmem_file_class

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

O_CLOEXEC = 0o2000000           # asm-generic fcntl.h: the same value on arm64 and riscv64


def sys_memfd_secret(k: "Kernel", cpu, task, flags, *a):
    cpu.charge(k.cost.syscall_body)
    if flags & 0xFFFFFFFF & ~O_CLOEXEC:
        return -E.EINVAL
    return task.files.install(secretmem_file_class()(k.mem), cloexec=bool(flags & O_CLOEXEC))
