"""eventfd2 <-> fs/eventfd.c.

``sys_eventfd2`` checks the flags and installs an ``EventFdFile`` (kernel/syscalls/eventpoll.py).  The
counter's read and write paths, which sleep, are ``eventfd_read``/``eventfd_write`` in
syscalls/eventpoll.py, called from read_write.py.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.fs.poll import EFD_CLOEXEC, EFD_NONBLOCK, EFD_SEMAPHORE, EventFdFile

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


# ---- eventfd ---------------------------------------------------------------------------------
def sys_eventfd2(k: "Kernel", cpu, task, initval, flags, *a):
    if flags & ~(EFD_SEMAPHORE | EFD_NONBLOCK | EFD_CLOEXEC):
        return -E.EINVAL
    cpu.charge(k.cost.syscall_body)
    return task.files.install(EventFdFile(initval & 0xFFFFFFFF, flags), cloexec=bool(flags & EFD_CLOEXEC))
