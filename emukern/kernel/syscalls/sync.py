"""fsync / fdatasync / sync / syncfs <-> fs/sync.c.

Files of the root are written straight through to the host, so there is nothing to flush:
fsync and fdatasync are sys.py's ``_fsync`` (EBADF, or EINVAL for a file without ->fsync), and
sync and syncfs succeed.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.syscalls import sys as syscalls_sys
from emukern.kernel.sysret import s64

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_fsync(k: "Kernel", cpu, task, fd, *a):
    return syscalls_sys._fsync(k, cpu, task, fd)


def sys_fdatasync(k: "Kernel", cpu, task, fd, *a):
    return syscalls_sys._fsync(k, cpu, task, fd)


def sys_sync(k: "Kernel", cpu, task, *a):
    cpu.charge(k.cost.syscall_body)
    return 0


def sys_syncfs(k: "Kernel", cpu, task, fd, *a):
    """syncfs: any open descriptor's file system (pipefs and the rest included) syncs: 0."""
    if task.files.get(s64(fd) if fd >> 31 == 0 else -1) is None:
        return -E.EBADF
    cpu.charge(k.cost.syscall_body)
    return 0
