"""statfs / fstatfs <-> fs/statfs.c.

Both write an asm-generic ``struct statfs`` from sys.py's ``_statfs_bytes``, whose figures are
fixed (no host file system is asked), pipefs for a pipe.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.files import PipeEnd
from emukern.kernel.fs import mount as fs_mount
from emukern.kernel.fs import namei as fs_namei
from emukern.kernel.syscalls import sys as syscalls_sys
from emukern.kernel.sysret import s64
from emukern.kernel.fs.file import VfsFile

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_statfs(k: "Kernel", cpu, task, path_ptr, buf, *a):
    path = fs_namei._user_path(k, task, path_ptr)
    if isinstance(path, int):
        return path
    node = k.vfs.lookup(task, path)
    if isinstance(node, int):
        return node
    if task.mm.find(buf) is None:
        return -E.EFAULT
    m = k.vfs.mounts.by_dev.get(node.dev)     # a tmpfs/ramfs the guest mounted
    task.mm.write(buf, fs_mount.statfs_bytes(m) if m is not None else syscalls_sys._statfs_bytes(k, node.dev))
    cpu.charge(k.cost.syscall_body)
    return 0


def sys_fstatfs(k: "Kernel", cpu, task, fd, buf, *a):
    f = task.files.get(s64(fd) if fd >> 31 == 0 else -1)
    if f is None:
        return -E.EBADF
    if task.mm.find(buf) is None:
        return -E.EFAULT
    dev = f.node.dev if isinstance(f, VfsFile) else None
    m = k.vfs.mounts.by_dev.get(dev) if dev is not None else None
    task.mm.write(buf, fs_mount.statfs_bytes(m) if m is not None
                  else syscalls_sys._statfs_bytes(k, dev, pipe=isinstance(f, PipeEnd)))
    cpu.charge(k.cost.syscall_body)
    return 0
