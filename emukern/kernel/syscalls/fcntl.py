"""fcntl <-> fs/fcntl.c.

``sys_fcntl`` handles F_DUPFD(_CLOEXEC) (through file.py's ``_dup``), F_GETFD/F_SETFD on the
descriptor table's close-on-exec set, and F_GETFL/F_SETFL; F_SETFL reaches only file kinds that
keep status flags (a socket's O_NONBLOCK), and any other command is EINVAL.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.fs.file import VfsFile
from emukern.kernel.syscalls import file as syscalls_file
from emukern.kernel.fs.uapi import (
    F_DUPFD,
    F_DUPFD_CLOEXEC,
    F_GETFD,
    F_GETFL,
    F_SETFD,
    F_SETFL,
    FD_CLOEXEC,
    O_CLOEXEC,
    O_CREAT,
    O_EXCL,
    O_TRUNC,
    _s32,
)

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_fcntl(k: "Kernel", cpu, task, fd, cmd, arg, *a):
    f = task.files.get(fd if fd < 1 << 63 else fd - (1 << 64))
    if f is None:
        return -E.EBADF
    fd = _s32(fd)
    if cmd in (F_DUPFD, F_DUPFD_CLOEXEC):
        nfd = syscalls_file._dup(k, task, fd, None, lowest=arg)
        if nfd >= 0 and cmd == F_DUPFD_CLOEXEC:
            task.files.cloexec.add(nfd)
        return nfd
    if cmd == F_GETFD:
        return FD_CLOEXEC if fd in task.files.cloexec else 0
    if cmd == F_SETFD:
        if arg & FD_CLOEXEC:
            task.files.cloexec.add(fd)
        else:
            task.files.cloexec.discard(fd)
        return 0
    if cmd == F_SETFL:
        setfl = getattr(f, "setfl", None)      # a plug-in kind keeping O_NONBLOCK (a socket)
        return setfl(arg) if setfl is not None else 0
    if cmd == F_GETFL:
        if isinstance(f, VfsFile):
            return f.flags & ~(O_CREAT | O_EXCL | O_TRUNC | O_CLOEXEC)
        nb = 0o4000 if getattr(f, "nonblock", False) is True else 0     # a socket's O_NONBLOCK
        return (2 if f.readable and f.writable else (1 if f.writable else 0)) | nb
    return -E.EINVAL
