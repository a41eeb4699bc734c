"""fadvise64 <-> mm/fadvise.c (the arm64/riscv64 number 223 is ``fadvise64_64``).

``sys_fadvise64`` checks what ksys_fadvise64_64 and generic_fadvise check, in their order: a
descriptor that is open (EBADF), a file that is not a FIFO (ESPIPE: a pipe has no page cache to
advise about), a length that is not negative, and an advice Linux knows (POSIX_FADV_NORMAL ..
POSIX_FADV_NOREUSE; anything else is EINVAL).  An accepted advice has no effect: emukern keeps no
page cache of its own (reads go to the host file every time), so there is nothing to read ahead,
drop or mark -- the call answers 0, as Linux does for every file with a valid advice.
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.kernel.files import OutputFile, PipeEnd, StdinFile, SysctlFile
from emukern.kernel.fs.file import VfsFile
from emukern.kernel.signal.defs import s32
from emukern.kernel.sysret import s64

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

POSIX_FADV_NORMAL, POSIX_FADV_NOREUSE = 0, 5
POSIX_FADV_WILLNEED = 3
S_IFMT, S_IFIFO, S_IFREG, S_IFBLK = 0o170000, 0o010000, 0o100000, 0o060000


def inode_type(k: "Kernel", f: Any) -> int:
    """The S_IFMT bits of the file's inode.  Files with a path or a host descriptor behind them
    (and plug-in kinds that declare a mode) are what fstat reports -- the one place emukern
    decides that (asm-generic's struct stat has st_mode at byte 16 on both architectures); a
    pipe is a FIFO, a /proc/sys entry a regular file, and the rest (eventfd, epoll, timerfd,
    signalfd) live on Linux's anonymous inode, whose mode carries no type bits at all."""
    if isinstance(f, PipeEnd):
        return S_IFIFO
    if isinstance(f, SysctlFile):
        return S_IFREG
    if isinstance(f, (VfsFile, OutputFile, StdinFile)):
        from emukern.kernel.syscalls.stat import _fstat_object
        return struct.unpack_from("<I", _fstat_object(k, f), 16)[0] & S_IFMT
    if f.stat_mode is not None:
        return f.stat_mode & S_IFMT
    return 0


def vfs_fadvise(k: "Kernel", f: Any, offset: int, length: int, advice: int) -> int:
    """generic_fadvise's checks (no emukern file has an fadvise method of its own): a FIFO is
    ESPIPE before anything else is looked at; a negative length or an unknown advice is
    EINVAL; otherwise the advice is taken, and changes nothing (no page cache here)."""
    if inode_type(k, f) == S_IFIFO:
        return -E.ESPIPE
    if length < 0:
        return -E.EINVAL
    if not POSIX_FADV_NORMAL <= advice <= POSIX_FADV_NOREUSE:
        return -E.EINVAL
    return 0


def sys_fadvise64(k: "Kernel", cpu, task, fd, offset, length, advice, *a):
    # fd and advice are ints (the register's low half); offset and length are loff_t
    f = task.files.get(s32(fd))
    if f is None:
        return -E.EBADF
    cpu.charge(k.cost.syscall_body)
    return vfs_fadvise(k, f, s64(offset), s64(length), s32(advice))
