"""Polling files: each file kind's readiness (vfs_poll: ``file_poll``), the epoll instance and
its items (fs/eventpoll.c), and the eventfd file (fs/eventfd.c).  The syscalls are
kernel/syscalls/{eventpoll,eventfd,select}.py.

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
  became ready).
- EPOLLET: Linux reports an edge-triggered item when a wake-up reached it (ep_poll_callback put
  it on the ready list) since it was last reported, and then does not put it back.  Here each
  wait queue counts its wake-ups (``WaitQueue.wakes``); an edge-triggered item remembers the sum
  over its file's queues when it was last reported (``EpItem.seen``) and is ready again only
  once that sum moved (and the file's mask still matches).  A new or modified item starts
  unreported, as ep_insert / ep_modify queue it when it is already ready.  The wake-ups carry no
  poll key, so any wake-up of the file's queues counts, where Linux would ignore one whose key
  does not meet the item's events.
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
    seen: int | None = None          # EPOLLET: the file's wake-up count when last reported


def wake_count(f: File) -> int:
    """How many wake-ups the queues a change of ``f`` is announced on have had (EPOLLET's edge)."""
    return sum(wq.wakes for wq in _queues(f))


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
            mask = EPOLLOUT | EPOLLWRNORM if len(p.buf) < p.size else 0
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
        if it.events & EPOLLET and it.seen is not None and it.seen == wake_count(it.file):
            continue                             # reported, and no wake-up reached it since
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




def _int32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v
