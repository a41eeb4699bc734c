"""ioctl <-> fs/ioctl.c.

emukern has no terminals or device ioctls: ``sys_ioctl`` answers EBADF for a bad descriptor and
ENOTTY otherwise, so stdio is not a tty and libc buffers it fully.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.fs.uapi import ENOTTY

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_ioctl(k: "Kernel", cpu, task, fd, request, arg, *a):
    f = task.files.get(fd if fd < 1 << 63 else fd - (1 << 64))
    if f is None:
        return -E.EBADF
    return -ENOTTY         # no terminals in emukern: stdio is not a tty (full buffering)
