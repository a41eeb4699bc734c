"""signalfd4 <-> fs/signalfd.c.

A signalfd holds a signal mask; read() dequeues pending signals of that mask — from the reading
thread's own pending set first, then the process's (dequeue_signal, as Linux) — and returns
each as a 128-byte ``struct signalfd_siginfo``.  As on Linux the signals must be blocked for a
program to see them here: an unblocked one is delivered (or acted on) on the way back to user
mode before any read.  Waiting readers and pollers sleep on the sighand's ``signalfd_wqh``,
which signal generation wakes (signalfd_notify, called from complete_signal).

Poll readiness is that of the task that created the descriptor (Linux's signalfd_poll looks at
``current``, the poller; emukern's File.poll has no caller, and a signalfd is in practice
polled by the thread that made it).
"""
from __future__ import annotations

import struct
from typing import Any

from emukern.errors import MemoryFault
from emukern.kernel import errno as E
from emukern.kernel.files import File, WaitQueue
from emukern.kernel.sysret import BLOCK
from emukern.kernel.signal import base as signal_base
from emukern.kernel.signal import delivery as signal_delivery
from emukern.kernel.signal.generate import signalfd_wqh
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


SFD_CLOEXEC, SFD_NONBLOCK = 0o2000000, 0o4000
SIGNALFD_SIGINFO_SIZE = 128
_ALL_SIGS = (1 << 64) - 1
_KERNEL_ONLY = (1 << 8) | (1 << 18)         # SIGKILL, SIGSTOP: never taken by a signalfd
_EPOLLIN = 0x1
# struct signalfd_siginfo: signo errno code pid uid fd tid band overrun trapno status int
# ptr utime stime addr addr_lsb pad2 syscall call_addr arch, padded to 128
_SSI = struct.Struct("<IiiIIiIIIIiiQQQQHHiQI")


def _copyinfo(info: Any) -> bytes:
    """signalfd_copyinfo: the fields of the siginfo's layout, the rest zero."""
    pid = uid = status = sint = overrun = tid = 0
    ptr = utime = stime = addr = 0
    if info.addr is not None:                       # _sigfault
        addr = info.addr & _ALL_SIGS
    elif info.timerid is not None:                  # _timer
        tid, overrun = info.timerid, info.overrun
        ptr = (info.value or 0) & _ALL_SIGS
        sint = struct.unpack("<i", struct.pack("<I", ptr & 0xFFFFFFFF))[0]
    elif info.status is not None:                   # _sigchld
        pid, uid, status, utime, stime = info.pid, info.uid, info.status, info.utime, info.stime
    else:                                           # _kill / _rt
        pid, uid = info.pid, info.uid
        if info.value is not None:
            ptr = info.value & _ALL_SIGS
            sint = struct.unpack("<i", struct.pack("<I", ptr & 0xFFFFFFFF))[0]
    raw = _SSI.pack(info.signo, info.errno, info.code, pid & 0xFFFFFFFF, uid & 0xFFFFFFFF, 0,
                    tid & 0xFFFFFFFF, 0, overrun & 0xFFFFFFFF, 0, status, sint, ptr,
                    utime & _ALL_SIGS, stime & _ALL_SIGS, addr, 0, 0, 0, 0, 0)
    return raw + bytes(SIGNALFD_SIGINFO_SIZE - len(raw))


class SignalFdFile(File):
    """A signalfd's context (``struct signalfd_ctx``): its signal mask."""
    kind = "signalfd"
    readable = True
    stat_mode = 0o600           # an anon inode (anon_inode_getfd)

    def __init__(self, mask: int, flags: int, owner: Any) -> None:
        super().__init__()
        self.mask = mask
        self.nonblock = bool(flags & SFD_NONBLOCK)
        self.owner = owner

    def _pending(self, task: Any) -> int:
        return (task.sigstate.pending.signal | task.signal.shared_pending.signal) & self.mask

    def poll(self) -> int:
        """signalfd_poll: readable while a signal of the mask is pending."""
        t = self.owner
        if t.sighand is None:
            return 0
        return _EPOLLIN if self._pending(t) else 0

    def poll_queues(self) -> list[WaitQueue]:
        return [signalfd_wqh(self.owner.sighand)] if self.owner.sighand is not None else []

    def kernel_read(self, k: Any, cpu: Any, task: Any, buf: int, count: int) -> Any:
        """signalfd_read: as many signalfd_siginfo as fit in ``count`` and are pending; only the
        first one is waited for (EAGAIN with SFD_NONBLOCK)."""
        n = count // SIGNALFD_SIGINFO_SIZE
        if n == 0:
            return -E.EINVAL
        signal_base._sig_init(k, task)
        out = bytearray()
        while len(out) < n * SIGNALFD_SIGINFO_SIZE:
            info = signal_delivery.dequeue_signal(k, task, ~self.mask & _ALL_SIGS)
            if info is None:
                break
            out += _copyinfo(info)
        signal_base.recalc_sigpending(k, task)
        if not out:
            if self.nonblock:
                return -E.EAGAIN
            k.sched.sleep_on(cpu, task, signalfd_wqh(task.sighand), "signalfd_read")
            return BLOCK
        try:
            task.mm.write(buf, bytes(out))
        except MemoryFault:           # a bad user pointer
            return -E.EFAULT
        cpu.charge(k.cost.syscall_body)
        return len(out)

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
    except MemoryFault:           # a bad user pointer
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
