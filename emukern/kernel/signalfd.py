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

from emukern.kernel import errno as E
from emukern.kernel.files import File, WaitQueue
from emukern.kernel.sysret import BLOCK
from emukern.kernel.signal import base as signal_base
from emukern.kernel.signal import delivery as signal_delivery


SFD_CLOEXEC, SFD_NONBLOCK = 0o2000000, 0o4000
SIGNALFD_SIGINFO_SIZE = 128
_ALL_SIGS = (1 << 64) - 1
_KERNEL_ONLY = (1 << 8) | (1 << 18)         # SIGKILL, SIGSTOP: never taken by a signalfd
_EPOLLIN = 0x1
# struct signalfd_siginfo: signo errno code pid uid fd tid band overrun trapno status int
# ptr utime stime addr addr_lsb pad2 syscall call_addr arch, padded to 128
_SSI = struct.Struct("<IiiIIiIIIIiiQQQQHHiQI")


def signalfd_wqh(sighand: Any) -> WaitQueue:
    wq = getattr(sighand, "signalfd_wqh", None)
    if wq is None:
        wq = WaitQueue("signalfd")
        sighand.signalfd_wqh = wq
    return wq


def signalfd_notify(k: Any, cpu: Any, task: Any) -> None:
    """signalfd_notify: a signal was queued for ``task``: wake the signalfd waiters."""
    wq = getattr(task.sighand, "signalfd_wqh", None)
    if wq is not None and wq.waiters:
        k.sched.wake_queue(wq, cpu.now)


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
        except Exception:
            return -E.EFAULT
        cpu.charge(k.cost.syscall_body)
        return len(out)


