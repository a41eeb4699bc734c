"""timerfd_create / timerfd_settime / timerfd_gettime <-> fs/timerfd.c.

The timer is an entry on the per-CPU timer heap (like ITIMER_REAL's): when it fires,
``timerfd_tmrproc`` counts one tick, marks the context expired and wakes the readers/pollers; it
is *not* re-armed there (HRTIMER_NORESTART).  A periodic timer is forwarded past "now" only when
the count is read (``timerfd_read``) or the value asked for (``timerfd_gettime``), and the
intervals skipped meanwhile are added to the count, as Linux's hrtimer_forward_now does: so
poll/epoll see it readable from the first expiry until a read, and the count a read returns
depends only on simulated time.  Every clock of emukern reads the same simulated clock (see
clock_gettime), so CLOCK_REALTIME, CLOCK_MONOTONIC and CLOCK_BOOTTIME timers behave alike; the
guest runs as root (getuid is 0), which has CAP_WAKE_ALARM, so the _ALARM clocks are accepted
too (without the capability Linux answers EPERM).  TFD_TIMER_CANCEL_ON_SET is accepted (with
ABSTIME on a realtime clock it arms cancellation on a clock_settime); emukern's realtime clock
is never set, so such a timer is never cancelled (no ECANCELED).
"""
from __future__ import annotations

import heapq
from typing import Any

from emukern.errors import MemoryFault
from emukern.kernel import errno as E
from emukern.kernel.files import File, WaitQueue
from emukern.kernel.fs.meta import realtime_to_cycles
from emukern.kernel.sysret import BLOCK
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME = 0, 1, 7
CLOCK_REALTIME_ALARM, CLOCK_BOOTTIME_ALARM = 8, 9
TFD_CLOEXEC, TFD_NONBLOCK = 0o2000000, 0o4000
TFD_TIMER_ABSTIME, TFD_TIMER_CANCEL_ON_SET = 1, 2
_EPOLLIN = 0x1


def _s32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


class TimerFdFile(File):
    """A timerfd's context (``struct timerfd_ctx``)."""
    kind = "timerfd"
    readable = True
    stat_mode = 0o600          # an anon inode: no file type bits, mode 0600 (anon_inode_getfd)

    def __init__(self, clockid: int, flags: int) -> None:
        super().__init__()
        self.clockid = clockid
        self.nonblock = bool(flags & TFD_NONBLOCK)
        self.expires = 0        # cycles of the armed expiry (0: disarmed)
        self.interval = 0       # cycles
        self.ticks = 0
        self.expired = False
        self.gen = 0            # bumped on every settime: a stale heap entry does nothing
        self.wq = WaitQueue("timerfd")

    def poll(self) -> int:
        """timerfd_poll: EPOLLIN (alone: no EPOLLRDNORM) while ticks are counted."""
        return _EPOLLIN if self.ticks else 0

    def poll_queues(self) -> list[WaitQueue]:
        return [self.wq]

    def forward(self, now: int) -> int:
        """hrtimer_forward_now: move an expired periodic expiry past ``now``; the overruns."""
        if self.expires > now:
            return 0
        n = (now - self.expires) // self.interval + 1
        self.expires += n * self.interval
        return n

    def kernel_read(self, k: Any, cpu: Any, task: Any, buf: int, count: int) -> Any:
        """timerfd_read: the 8-byte count of expirations since the last read (or settime);
        EINVAL for a buffer under 8 bytes, EAGAIN with TFD_NONBLOCK before the first expiry,
        else sleep until it."""
        if count < 8:
            return -E.EINVAL
        if not self.ticks:
            if self.nonblock:
                return -E.EAGAIN
            k.sched.sleep_on(cpu, task, self.wq, "timerfd_read")
            return BLOCK
        ticks = self.ticks
        if self.expired and self.interval:
            ticks += self.forward(cpu.now) - 1
            timerfd_arm(k, cpu, self)
        try:
            task.mm.write(buf, ticks.to_bytes(8, "little"))
        except MemoryFault:           # a bad user pointer
            return -E.EFAULT
        self.expired = False
        self.ticks = 0
        cpu.charge(k.cost.syscall_body)
        return 8


class _TimerFdEvent:
    """A timer-heap entry for a timerfd (the hrtimer whose callback is timerfd_tmrproc)."""
    state = None                # not a task: run_timers hands it to it_real_fn

    def __init__(self, f: TimerFdFile, gen: int) -> None:
        self.f, self.gen = f, gen

    def timer_fire(self, k: Any, cpu: Any, when: int) -> None:
        """timerfd_tmrproc: one more tick, wake whoever reads or polls."""
        f = self.f
        if f.gen != self.gen or not f.expires or f.refs == 0 or f.expires != when:
            return
        f.expired = True
        f.ticks += 1
        k.sched.wake_queue(f.wq, cpu.now)

def timerfd_arm(k: "Kernel", cpu: Any, f: TimerFdFile) -> None:
    k._seq += 1
    heapq.heappush(k.percpu[cpu.index].timers, (f.expires, k._seq, _TimerFdEvent(f, f.gen)))


def sys_timerfd_create(k: "Kernel", cpu, task, clockid, flags, *a):
    """timerfd_create: the five clocks it knows, TFD_CLOEXEC/TFD_NONBLOCK only (EINVAL)."""
    clockid = _s32(clockid)
    flags = _s32(flags)
    if flags & ~(TFD_CLOEXEC | TFD_NONBLOCK) or clockid not in (
            CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME, CLOCK_REALTIME_ALARM, CLOCK_BOOTTIME_ALARM):
        return -E.EINVAL
    cpu.charge(k.cost.syscall_body)
    return task.files.install(TimerFdFile(clockid, flags), cloexec=bool(flags & TFD_CLOEXEC))


def _timerfd_get(k: "Kernel", task, fd) -> Any:
    """timerfd_fget: EBADF for no descriptor, EINVAL for a file that is not a timerfd."""
    fd = _s32(fd)
    f = task.files.get(fd) if task.files is not None and fd >= 0 else None
    if f is None:
        return -E.EBADF
    if not isinstance(f, TimerFdFile):
        return -E.EINVAL
    return f


def _timerfd_value(k: "Kernel", cpu, f: TimerFdFile) -> bytes:
    """The itimerspec timerfd_gettime reports: {it_interval, it_value = time left (0 once
    expired)}; an expired periodic timer is forwarded first, its overruns counted."""
    if f.expired and f.interval:
        f.expired = False
        f.ticks += f.forward(cpu.now) - 1
        timerfd_arm(k, cpu, f)
    left = max(0, f.expires - cpu.now) if f.expires else 0

    def ts(c: int) -> bytes:
        ns = int(k.clock.ns(c)) if c else 0
        return (ns // 10**9).to_bytes(8, "little") + (ns % 10**9).to_bytes(8, "little")
    return ts(f.interval) + ts(left)


def sys_timerfd_settime(k: "Kernel", cpu, task, fd, flags, new, old, *a):
    """do_timerfd_settime: copy the itimerspec (EFAULT), check flags and the timespecs
    (EINVAL), find the timerfd (EBADF/EINVAL), take the old value, then re-arm: ticks
    reset, a zero it_value disarms, TFD_TIMER_ABSTIME takes it_value as a clock reading (in
    the past: it expires at once)."""
    try:
        raw = task.mm.read(new, 32)
    except MemoryFault:           # a bad user pointer
        return -E.EFAULT
    vals = [int.from_bytes(raw[i:i + 8], "little", signed=True) for i in range(0, 32, 8)]
    flags = _s32(flags)
    if flags & ~(TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET):
        return -E.EINVAL
    for sec, nsec in ((vals[0], vals[1]), (vals[2], vals[3])):
        if sec < 0 or not 0 <= nsec < 10**9:        # itimerspec64_valid
            return -E.EINVAL
    f = _timerfd_get(k, task, fd)
    if not isinstance(f, TimerFdFile):
        return f
    cpu.charge(k.cost.syscall_body)
    oldval = _timerfd_value(k, cpu, f)
    f.gen += 1
    f.ticks = 0
    f.expired = False
    f.interval = k.clock.cycles_for_ns(vals[0] * 10**9 + vals[1])
    value = vals[2] * 10**9 + vals[3]
    if value == 0:
        f.expires = 0
    else:
        if flags & TFD_TIMER_ABSTIME and f.clockid in (CLOCK_REALTIME, CLOCK_REALTIME_ALARM):
            f.expires = max(1, realtime_to_cycles(k, value))     # a wall-clock date
        elif flags & TFD_TIMER_ABSTIME:
            f.expires = max(1, k.clock.cycles_for_ns(value))
        else:
            f.expires = cpu.now + max(1, k.clock.cycles_for_ns(value))
        if f.expires <= cpu.now:                    # already due: the hrtimer fires at once
            f.ticks = 1
            if f.interval:
                f.ticks += f.forward(cpu.now) - 1
                timerfd_arm(k, cpu, f)
            k.sched.wake_queue(f.wq, cpu.now)
        else:
            timerfd_arm(k, cpu, f)
    if old:
        try:
            task.mm.write(old, oldval)
        except MemoryFault:           # a bad user pointer
            return -E.EFAULT
    return 0


def sys_timerfd_gettime(k: "Kernel", cpu, task, fd, cur, *a):
    f = _timerfd_get(k, task, fd)
    if not isinstance(f, TimerFdFile):
        return f
    cpu.charge(k.cost.syscall_body)
    val = _timerfd_value(k, cpu, f)
    try:
        task.mm.write(cur, val)
    except MemoryFault:           # a bad user pointer
        return -E.EFAULT
    return 0
