"""getdents64 <-> fs/readdir.c.

``sys_getdents64`` fills the buffer with ``linux_dirent64`` records from a directory
``VfsFile``'s ``getdents`` (at most 1 MiB per call); any other descriptor is ENOTDIR.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.fs.file import VfsFile
from emukern.kernel.fs.uapi import _s32

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_getdents64(k: "Kernel", cpu, task, fd, dirp, count, *a):
    f = task.files.get(_s32(fd))
    if f is None:
        return -E.EBADF
    if not isinstance(f, VfsFile):
        return -E.ENOTDIR
    data = f.getdents(min(count & 0xFFFFFFFF, 1 << 20))
    if isinstance(data, int):
        return data
    task.mm.write(dirp, data)
    cpu.charge(k.cost.syscall_body + k.cost.syscall_per_byte * len(data))
    return len(data)
