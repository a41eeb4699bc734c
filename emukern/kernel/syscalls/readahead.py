"""readahead <-> mm/readahead.c (ksys_readahead).

The descriptor must be open for reading (EBADF otherwise: a write-only file, or a pipe's write
end); the file must be one readahead can work on -- a regular file or a block device -- or the
call is EINVAL (a directory, a pipe's read end, an eventfd, a socket, a terminal).  What is left
is fadvise(POSIX_FADV_WILLNEED) over [offset, offset + count): a count of 2**63 or more is a
negative length there (EINVAL), and anything else is 0 with no effect, since emukern keeps no
page cache to fill (see fadvise.py).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.signal.defs import s32
from emukern.kernel.syscalls.fadvise import POSIX_FADV_WILLNEED, S_IFBLK, S_IFREG, inode_type, vfs_fadvise
from emukern.kernel.sysret import s64

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_readahead(k: "Kernel", cpu, task, fd, offset, count, *a):
    f = task.files.get(s32(fd))
    if f is None or not f.readable:
        return -E.EBADF
    cpu.charge(k.cost.syscall_body)
    if inode_type(k, f) not in (S_IFREG, S_IFBLK):
        return -E.EINVAL
    # the size_t count becomes fadvise's loff_t length
    return vfs_fadvise(k, f, s64(offset), s64(count), POSIX_FADV_WILLNEED)
