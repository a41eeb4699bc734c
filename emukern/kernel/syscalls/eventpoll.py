"""epoll_create1 / epoll_ctl / epoll_pwait / epoll_pwait2 <-> fs/eventpoll.c.

The epoll instance and its items (``EventPollFile``, ``EpItem``) and the readiness checks are
in kernel/fs/poll.py; this module holds the syscalls and ``ep_poll``, which reports ready items
or sleeps until a watched file changes or the deadline (fixed on the first pass) passes, or a
signal ends it with EINTR (under epoll_pwait's own signal mask while it waits).  It also holds ``eventfd_read`` and
``eventfd_write`` (fs/eventfd.c's blocking counter paths), which read()/write() call.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.machine.memory import OutOfMemory
from emukern.kernel.fs.poll import (
    EP_MAX_EVENTS,
    EPOLL_CLOEXEC,
    EPOLL_CTL_ADD,
    EPOLL_CTL_DEL,
    EPOLL_CTL_MOD,
    EPOLL_EVENT_SIZE,
    EPOLLET,
    EPOLLEXCLUSIVE,
    EPOLLONESHOT,
    EPOLLWAKEUP,
    ULLONG_MAX,
    EpItem,
    EventFdFile,
    EventPollFile,
    _int32,
    _queues,
    _reaches,
    _ready,
    file_poll,
    wake_count,
)
from emukern.kernel.signal import base as signal_base
from emukern.kernel.signal import syscalls as signal_syscalls
from emukern.kernel.sysret import BLOCK, s64

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def eventfd_read(k: "Kernel", cpu, task, f: EventFdFile, buf: int, count: int) -> Any:
    """eventfd_read: take the whole counter (or 1 in semaphore mode), sleep while it is 0."""
    if count < 8:
        return -E.EINVAL
    if f.count == 0:
        if f.nonblock:
            return -E.EAGAIN
        k.sched.sleep_on(cpu, task, f.wq, "eventfd_read")
        return BLOCK
    val = 1 if f.semaphore else f.count
    task.mm.write(buf, val.to_bytes(8, "little"))
    f.count -= val
    cpu.charge(k.cost.syscall_body)
    k.sched.wake_queue(f.wq, cpu.now)
    return 8


def eventfd_write(k: "Kernel", cpu, task, f: EventFdFile, buf: int, count: int) -> Any:
    """eventfd_write: add to the counter; sleep while the sum would reach ULLONG_MAX."""
    if count < 8:
        return -E.EINVAL
    val = int.from_bytes(task.mm.read(buf, 8), "little")
    if val == ULLONG_MAX:
        return -E.EINVAL
    if ULLONG_MAX - f.count <= val:
        if f.nonblock:
            return -E.EAGAIN
        k.sched.sleep_on(cpu, task, f.wq, "eventfd_write")
        return BLOCK
    f.count += val
    cpu.charge(k.cost.syscall_body)
    if val:
        k.sched.wake_queue(f.wq, cpu.now)
    return 8


# ---- epoll -----------------------------------------------------------------------------------
# what one watch is charged to the machine's guest memory: Linux allocates epitems from a
# SLAB_ACCOUNT cache (memcg-charged) and caps them at max_user_watches, 4 % of low memory over
# EP_ITEM_COST; emukern charges a watch's host cost to --mem-limit instead, and answers a
# refused charge as the cap does (ENOSPC).  One descriptor can be watched by every epoll
# instance, so without a charge n descriptors and n instances would make n^2 watches.
EPITEM_CHARGE = 256
ENOSPC = 28                                      # asm-generic/errno-base.h


class ChargedEventPoll(EventPollFile):
    """An epoll instance whose watches are charged to the machine's guest memory while they
    exist (EPOLL_CTL_DEL, the watched file's last close, or the instance's own close)."""

    def __init__(self, pool: Any) -> None:
        super().__init__()
        self.pool = pool
        self.charged = 0                 # watches charged (items dropped lazily: settle())

    def charge_one(self) -> bool:
        if self.pool is not None:
            try:
                self.pool.charge(EPITEM_CHARGE, "epoll watch")
            except OutOfMemory:
                return False
        self.charged += 1
        return True

    def settle(self) -> None:
        """Give back the charge of watches gone since the last look."""
        gone = self.charged - len(self.items)
        if gone > 0:
            if self.pool is not None:
                self.pool.uncharge(gone * EPITEM_CHARGE)
            self.charged -= gone

    def on_close(self) -> list:
        self.items.clear()                  # ep_free: the instance's watches go with it
        self.settle()
        return super().on_close()


def sys_epoll_create1(k: "Kernel", cpu, task, flags, *a):
    if flags & ~EPOLL_CLOEXEC:
        return -E.EINVAL
    cpu.charge(k.cost.syscall_body)
    return task.files.install(ChargedEventPoll(k.mem))


def sys_epoll_ctl(k: "Kernel", cpu, task, epfd, op, fd, event, *a):
    epfd, fd = s64(epfd), s64(fd)
    cpu.charge(k.cost.syscall_body)
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
        if isinstance(ep, ChargedEventPoll):
            ep.settle()
            if not ep.charge_one():
                return -ENOSPC                    # ep_insert: past max_user_watches
        ep.items[key] = EpItem(fd, f, ev, data)
    elif op == EPOLL_CTL_MOD:
        it = ep.items.get(key)
        if it is None:
            return -E.ENOENT
        if it.events & EPOLLEXCLUSIVE:
            return -E.EINVAL
        it.events, it.data, it.seen = ev, data, None    # ep_modify: re-queued if ready
    elif op == EPOLL_CTL_DEL:
        if ep.items.pop(key, None) is None:
            return -E.ENOENT
        if isinstance(ep, ChargedEventPoll):
            ep.settle()
    else:
        return -E.EINVAL
    # a waiter on this epoll must look again (ep_insert/ep_modify wake ep->wq when ready)
    k.sched.wake_queue(ep.wq, cpu.now)
    return 0


def sys_epoll_pwait(k: "Kernel", cpu, task, epfd, events, maxevents, timeout, sigmask, sigsetsize, *a):
    """epoll_wait's syscall on arm64/riscv64: a timeout in milliseconds (negative = forever),
    waiting under the caller's temporary signal mask when it gives one (``_with_sigmask``)."""
    ms = _int32(timeout)
    return _with_sigmask(k, cpu, task, sigmask, sigsetsize,
                         lambda: ep_poll(k, cpu, task, epfd, events, maxevents, ms * 1_000_000 if ms >= 0 else -1))


def sys_epoll_pwait2(k: "Kernel", cpu, task, epfd, events, maxevents, timeout_ptr, sigmask, sigsetsize, *a):
    """epoll_pwait with a struct timespec timeout (NULL = forever)."""
    ns = -1
    if timeout_ptr:
        ts = task.mm.read(timeout_ptr, 16)
        sec = int.from_bytes(ts[:8], "little", signed=True)
        nsec = int.from_bytes(ts[8:], "little", signed=True)
        if sec < 0 or not 0 <= nsec < 10**9:
            return -E.EINVAL
        ns = sec * 10**9 + nsec
    return _with_sigmask(k, cpu, task, sigmask, sigsetsize,
                         lambda: ep_poll(k, cpu, task, epfd, events, maxevents, ns))


def _with_sigmask(k: "Kernel", cpu, task, sigmask: int, sigsetsize: int, wait: Any) -> Any:
    """set_user_sigmask around the wait, as epoll_pwait does: the mask is swapped in on the first
    pass (EINVAL for a size other than 8 bytes) and stays while the task sleeps; the original
    comes back when the call returns, except on EINTR, where the handler's frame saves it and
    sigreturn restores it (restore_saved_sigmask_unless)."""
    if not sigmask:
        return wait()
    st = signal_base._sig_init(k, task)
    first = st.in_wait != "epoll_pwait"
    st.in_wait = ""
    if first:
        if sigsetsize != 8:
            return -E.EINVAL
        st.saved_sigmask = st.blocked
        signal_syscalls.set_current_blocked(k, task, task.mm.read_u64(sigmask))
    ret = wait()
    if ret is BLOCK:
        st.in_wait = "epoll_pwait"
    elif ret != -E.EINTR:
        signal_syscalls._ppoll_restore_mask(k, task)
    return ret


def ep_poll(k: "Kernel", cpu, task, epfd, events, maxevents, timeout_ns: int) -> Any:
    """Report ready items; else sleep until a watched file changes or the deadline passes.

    The deadline is fixed on the first pass (a re-run after a wake-up that found nothing
    keeps the original one, as ep_poll's loop does with its absolute expiry)."""
    maxevents = _int32(maxevents)
    timed_out = k.sched.finish_wait(task)
    deadline = task.ep_deadline
    task.ep_deadline = None
    cpu.charge(k.cost.syscall_body)
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
        deadline = cpu.now + k.clock.cycles_for_ns(timeout_ns)
    if ready or timeout_ns == 0 or timed_out or (deadline is not None and deadline <= cpu.now):
        buf = bytearray()
        for it, mask in ready:
            buf += mask.to_bytes(4, "little") + bytes(4) + it.data.to_bytes(8, "little")
            if it.events & EPOLLET:
                it.seen = wake_count(it.file)    # not put back on the ready list
            if it.events & EPOLLONESHOT:
                it.events &= EPOLLONESHOT | EPOLLET | EPOLLEXCLUSIVE | EPOLLWAKEUP
        if buf:
            task.mm.write(events, bytes(buf))
        return len(ready)
    if task.sigpending:
        # ep_poll: a signal ends the wait with EINTR, never restarted (whatever SA_RESTART says)
        return -E.EINTR
    queues = [ep.wq]
    for it in ep.live_items():
        queues += _queues(it.file)
    for wq in queues:
        wq.add(task)
    task.waitqueues = queues
    if deadline is not None:
        task.ep_deadline = deadline
        k.sched.add_timer(task, deadline)
    k.sched.block_current(cpu, task, "epoll_wait")
    return BLOCK
