"""syscalls.signalfd: generated from the kernel mixins."""
from __future__ import annotations
from typing import TYPE_CHECKING
from emukern.kernel import errno as E
from emukern.kernel.signal import base as signal_base
from emukern.kernel.signalfd import SFD_CLOEXEC
from emukern.kernel.signalfd import SFD_NONBLOCK
from emukern.kernel.signalfd import SignalFdFile
from emukern.kernel.signalfd import _ALL_SIGS
from emukern.kernel.signalfd import _KERNEL_ONLY
from emukern.kernel.signalfd import signalfd_wqh
if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_signalfd4(k: "Kernel", cpu, task, ufd, user_mask, sizemask, flags, *a):
    """do_signalfd4: a new signalfd for ufd == -1, else a new mask for an existing one
    (EBADF: no such descriptor, EINVAL: not a signalfd); SIGKILL/SIGSTOP are dropped from
    the mask; EINVAL for unknown flags or a sigset size other than 8."""
    flags &= 0xFFFFFFFF
    if flags & ~(SFD_CLOEXEC | SFD_NONBLOCK):
        return -E.EINVAL
    if sizemask != 8:
        return -E.EINVAL
    try:
        mask = int.from_bytes(task.mm.read(user_mask, 8), "little")
    except Exception:
        return -E.EFAULT
    mask &= ~_KERNEL_ONLY & _ALL_SIGS
    signal_base._sig_init(k, task)
    cpu.charge(k.cost.syscall_body)
    ufd &= 0xFFFFFFFF                       # int ufd
    ufd = ufd - (1 << 32) if ufd >> 31 else ufd
    if ufd == -1:
        return task.files.install(SignalFdFile(mask, flags, task), cloexec=bool(flags & SFD_CLOEXEC))
    f = task.files.get(ufd) if ufd >= 0 else None
    if f is None:
        return -E.EBADF
    if not isinstance(f, SignalFdFile):
        return -E.EINVAL
    f.mask = mask
    k.sched.wake_queue(signalfd_wqh(task.sighand), cpu.now)
    return ufd
