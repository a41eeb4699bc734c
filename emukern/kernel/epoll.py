"""epoll and eventfd <-> fs/eventpoll.c and fs/eventfd.c.

fp-stress (tools/testing/selftests/arm64/fp) watches its children's stdout pipes with
``epoll_create1``/``epoll_ctl``/``epoll_wait``; glibc's ``epoll_wait`` is the ``epoll_pwait``
syscall on arm64 and riscv64 (the asm-generic table has no plain epoll_wait).

How it maps onto emukern's kernel:
- readiness is each file's ``poll``: a pipe's read end is readable while it holds data and
  reports EPOLLHUP once no writer is left (pipe_poll); the write end is writable while there is
  room and reports EPOLLERR when no reader is left; an eventfd is readable while its counter is
  non-zero and writable while one more increment fits (eventfd_poll).
- a wait that finds nothing ready sleeps on the wait queues of every watched file (what
  ``ep_poll_callback`` entries on those queues give Linux) and, with a timeout, on a timer; when
  woken the syscall runs again from the start (emukern's restart of blocked syscalls), removes
  itself from every queue and polls again, so a wake-up that another task already consumed just
  sleeps again, like ``ep_poll``'s loop.
- an item goes away when its file's last descriptor is closed (eventpoll_release on the final
  fput), not when one of several descriptors for it is closed.
- the ready list is reported in the order items were added (Linux reports in the order files
  became ready); EPOLLET is accepted and reported level-triggered — nothing in the selftests
  relies on edge triggering, and the difference is stated here rather than hidden.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.kernel.files import File, OutputFile, PipeEnd, StdinFile, WaitQueue
from emukern.kernel.sysret import BLOCK, s64

if TYPE_CHECKING:
    from emukern.kernel.task import Task

EPOLLIN, EPOLLPRI, EPOLLOUT, EPOLLERR, EPOLLHUP = 0x1, 0x2, 0x4, 0x8, 0x10
EPOLLRDNORM, EPOLLWRNORM, EPOLLRDHUP = 0x40, 0x100, 0x2000
EPOLLEXCLUSIVE, EPOLLWAKEUP, EPOLLONESHOT, EPOLLET = 1 << 28, 1 << 29, 1 << 30, 1 << 31
EPOLL_CTL_ADD, EPOLL_CTL_DEL, EPOLL_CTL_MOD = 1, 2, 3
EPOLL_CLOEXEC = 0o2000000
EPOLL_MAX_NESTS = 4
EP_MAX_EVENTS = 0x7FFFFFFF // 16            # INT_MAX / sizeof(struct epoll_event)
EPOLL_EVENT_SIZE = 16     # {u32 events; u64 data} is packed only on x86-64: 16 bytes on arm64/riscv64

EFD_SEMAPHORE, EFD_NONBLOCK, EFD_CLOEXEC = 1, 0o4000, 0o2000000
ULLONG_MAX = (1 << 64) - 1


class EventFdFile(File):
    """An eventfd: a 64-bit counter that read() takes and write() adds to."""
    kind = "eventfd"
    readable = True
    writable = True

    def __init__(self, count: int, flags: int) -> None:
        super().__init__()
        self.count = count
        self.semaphore = bool(flags & EFD_SEMAPHORE)
        self.nonblock = bool(flags & EFD_NONBLOCK)
        self.wq = WaitQueue("eventfd")


@dataclass
class EpItem:
    fd: int
    file: File
    events: int
    data: int


class EventPollFile(File):
    """The file behind an epoll descriptor: its interest list (``struct eventpoll``)."""
    kind = "epoll"

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[tuple[int, int], EpItem] = {}     # (fd, id(file)) -> item, in add order
        self.wq = WaitQueue("epoll")

    def live_items(self) -> list[EpItem]:
        dead = [k for k, it in self.items.items() if it.file.refs == 0]
        for k in dead:                         # eventpoll_release: the file's last close
            del self.items[k]
        return list(self.items.values())


def file_poll(f: File, depth: int = 0) -> int | None:
    """The file's ``->poll`` mask, or None when the file cannot be polled (a regular file)."""
    if isinstance(f, PipeEnd):
        p = f.pipe
        if f.write_end:
            mask = EPOLLOUT | EPOLLWRNORM if len(p.buf) < 65536 else 0
            return mask | (EPOLLERR if p.readers == 0 else 0)
        mask = EPOLLIN | EPOLLRDNORM if p.buf else 0
        return mask | (EPOLLHUP if p.writers == 0 else 0)
    if isinstance(f, EventFdFile):
        mask = EPOLLIN if f.count > 0 else 0
        if f.count == ULLONG_MAX:
            mask |= EPOLLERR
        if ULLONG_MAX - 1 > f.count:
            mask |= EPOLLOUT
        return mask
    if isinstance(f, EventPollFile):
        if depth >= EPOLL_MAX_NESTS:
            return 0
        return EPOLLIN | EPOLLRDNORM if _ready(f, depth + 1) else 0
    if isinstance(f, OutputFile):
        return EPOLLOUT | EPOLLWRNORM            # a terminal/log that always takes data
    if isinstance(f, StdinFile):
        return EPOLLIN | EPOLLRDNORM             # data or end of file: read() never blocks
    return f.poll()                              # a plug-in kind (File.poll), None if none


def _ready(ep: EventPollFile, depth: int = 0) -> list[tuple[EpItem, int]]:
    out = []
    for it in ep.live_items():
        if not it.events & ~(EPOLLONESHOT | EPOLLET | EPOLLEXCLUSIVE | EPOLLWAKEUP):
            continue                             # a fired EPOLLONESHOT item, disarmed
        mask = file_poll(it.file, depth) or 0
        mask &= it.events | EPOLLERR | EPOLLHUP
        if mask:
            out.append((it, mask))
    return out


def _queues(f: File, depth: int = 0) -> list[WaitQueue]:
    """The wait queues a change of ``f``'s readiness is announced on."""
    if isinstance(f, PipeEnd):
        return [f.pipe.wwait if f.write_end else f.pipe.rwait]
    if isinstance(f, EventFdFile):
        return [f.wq]
    if isinstance(f, EventPollFile) and depth < EPOLL_MAX_NESTS:
        qs = [f.wq]
        for it in f.live_items():
            qs += _queues(it.file, depth + 1)
        return qs
    return f.poll_queues()                       # a plug-in kind (File.poll_queues)


def _reaches(ep: EventPollFile, target: EventPollFile, depth: int = 0) -> bool:
    """Would adding ``target`` to ``ep`` close a loop (ep_loop_check)?"""
    if target is ep:
        return True
    if depth > EPOLL_MAX_NESTS:
        return True
    return any(isinstance(it.file, EventPollFile) and _reaches(ep, it.file, depth + 1)
               for it in target.live_items())


class EpollMixin:
    """epoll_create1 / epoll_ctl / epoll_pwait and eventfd2; mixed into the kernel."""

    cost: Any
    clock: Any
    sched: Any          # the kernel's Scheduler (kernel/sched.py)

    # ---- eventfd ---------------------------------------------------------------------------------
    def sys_eventfd2(self, cpu, task, initval, flags, *a):
        if flags & ~(EFD_SEMAPHORE | EFD_NONBLOCK | EFD_CLOEXEC):
            return -E.EINVAL
        cpu.charge(self.cost.syscall_body)
        return task.files.install(EventFdFile(initval & 0xFFFFFFFF, flags))

    def eventfd_read(self, cpu, task, f: EventFdFile, buf: int, count: int) -> Any:
        """eventfd_read: take the whole counter (or 1 in semaphore mode), sleep while it is 0."""
        if count < 8:
            return -E.EINVAL
        if f.count == 0:
            if f.nonblock:
                return -E.EAGAIN
            self.sched.sleep_on(cpu, task, f.wq, "eventfd_read")
            return BLOCK
        val = 1 if f.semaphore else f.count
        task.mm.write(buf, val.to_bytes(8, "little"))
        f.count -= val
        cpu.charge(self.cost.syscall_body)
        self.sched.wake_queue(f.wq, cpu.now)
        return 8

    def eventfd_write(self, cpu, task, f: EventFdFile, buf: int, count: int) -> Any:
        """eventfd_write: add to the counter; sleep while the sum would reach ULLONG_MAX."""
        if count < 8:
            return -E.EINVAL
        val = int.from_bytes(task.mm.read(buf, 8), "little")
        if val == ULLONG_MAX:
            return -E.EINVAL
        if ULLONG_MAX - f.count <= val:
            if f.nonblock:
                return -E.EAGAIN
            self.sched.sleep_on(cpu, task, f.wq, "eventfd_write")
            return BLOCK
        f.count += val
        cpu.charge(self.cost.syscall_body)
        if val:
            self.sched.wake_queue(f.wq, cpu.now)
        return 8

    # ---- epoll -----------------------------------------------------------------------------------
    def sys_epoll_create1(self, cpu, task, flags, *a):
        if flags & ~EPOLL_CLOEXEC:
            return -E.EINVAL
        cpu.charge(self.cost.syscall_body)
        return task.files.install(EventPollFile())

    def sys_epoll_ctl(self, cpu, task, epfd, op, fd, event, *a):
        epfd, fd = s64(epfd), s64(fd)
        cpu.charge(self.cost.syscall_body)
        ep, f = task.files.get(epfd), task.files.get(fd)
        ev = data = 0
        if op in (EPOLL_CTL_ADD, EPOLL_CTL_MOD):
            raw = task.mm.read(event, EPOLL_EVENT_SIZE)    # copy_from_user first: EFAULT wins
            ev, data = int.from_bytes(raw[:4], "little"), int.from_bytes(raw[8:], "little")
        if ep is None or f is None:
            return -E.EBADF
        if file_poll(f) is None:
            return -E.EPERM                          # regular files cannot be watched
        if not isinstance(ep, EventPollFile) or f is ep:
            return -E.EINVAL
        if op == EPOLL_CTL_ADD and ev & EPOLLEXCLUSIVE and isinstance(f, EventPollFile):
            return -E.EINVAL
        key = (fd, id(f))
        ep.live_items()
        if op == EPOLL_CTL_ADD:
            if key in ep.items:
                return -E.EEXIST
            if isinstance(f, EventPollFile) and _reaches(ep, f):
                return -40                            # ELOOP
            ep.items[key] = EpItem(fd, f, ev, data)
        elif op == EPOLL_CTL_MOD:
            it = ep.items.get(key)
            if it is None:
                return -E.ENOENT
            if it.events & EPOLLEXCLUSIVE:
                return -E.EINVAL
            it.events, it.data = ev, data
        elif op == EPOLL_CTL_DEL:
            if ep.items.pop(key, None) is None:
                return -E.ENOENT
        else:
            return -E.EINVAL
        # a waiter on this epoll must look again (ep_insert/ep_modify wake ep->wq when ready)
        self.sched.wake_queue(ep.wq, cpu.now)
        return 0

    def sys_epoll_pwait(self, cpu, task, epfd, events, maxevents, timeout, sigmask, sigsetsize, *a):
        """epoll_wait's syscall on arm64/riscv64: a timeout in milliseconds (negative = forever).

        The signal mask argument is accepted and not applied: emukern delivers no signals to
        user handlers here, so there is nothing for it to hold back."""
        ms = _int32(timeout)
        return self.ep_poll(cpu, task, epfd, events, maxevents, ms * 1_000_000 if ms >= 0 else -1)

    def sys_epoll_pwait2(self, cpu, task, epfd, events, maxevents, timeout_ptr, sigmask, sigsetsize, *a):
        """epoll_pwait with a struct timespec timeout (NULL = forever)."""
        ns = -1
        if timeout_ptr:
            ts = task.mm.read(timeout_ptr, 16)
            sec = int.from_bytes(ts[:8], "little", signed=True)
            nsec = int.from_bytes(ts[8:], "little", signed=True)
            if sec < 0 or not 0 <= nsec < 10**9:
                return -E.EINVAL
            ns = sec * 10**9 + nsec
        return self.ep_poll(cpu, task, epfd, events, maxevents, ns)

    def ep_poll(self, cpu, task, epfd, events, maxevents, timeout_ns: int) -> Any:
        """Report ready items; else sleep until a watched file changes or the deadline passes.

        The deadline is fixed on the first pass (a re-run after a wake-up that found nothing
        keeps the original one, as ep_poll's loop does with its absolute expiry)."""
        maxevents = _int32(maxevents)
        timed_out = self.sched.finish_wait(task)
        deadline = task.ep_deadline
        task.ep_deadline = None
        cpu.charge(self.cost.syscall_body)
        if maxevents <= 0 or maxevents > EP_MAX_EVENTS:
            return -E.EINVAL
        if task.mm.find(events) is None:
            return -E.EFAULT
        ep = task.files.get(s64(epfd))
        if ep is None:
            return -E.EBADF
        if not isinstance(ep, EventPollFile):
            return -E.EINVAL
        ready = _ready(ep)[:maxevents]
        if deadline is None and timeout_ns > 0:
            deadline = cpu.now + self.clock.cycles_for_ns(timeout_ns)
        if ready or timeout_ns == 0 or timed_out or (deadline is not None and deadline <= cpu.now):
            buf = bytearray()
            for it, mask in ready:
                buf += mask.to_bytes(4, "little") + bytes(4) + it.data.to_bytes(8, "little")
                if it.events & EPOLLONESHOT:
                    it.events &= EPOLLONESHOT | EPOLLET | EPOLLEXCLUSIVE | EPOLLWAKEUP
            if buf:
                task.mm.write(events, bytes(buf))
            return len(ready)
        queues = [ep.wq]
        for it in ep.live_items():
            queues += _queues(it.file)
        for wq in queues:
            wq.add(task)
        task.waitqueues = queues
        if deadline is not None:
            task.ep_deadline = deadline
            self.sched.add_timer(task, deadline)
        self.sched.block_current(cpu, task, "epoll_wait")
        return BLOCK


def _int32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v
