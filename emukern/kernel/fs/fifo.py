"""Named pipes (FIFOs) of the guest's root <-> fs/pipe.c's fifo_open.

A FIFO in the root is a host FIFO node (made by mknodat, or put there by whoever built the
root), but the host node is only a name: emukern never opens it (a host open could block
emukern itself, or meet a host process on the other end).  Opening it attaches to an in-kernel
pipe (``Fifo``) kept per host inode, as net/unix_bind.py finds a bound socket by its inode: two
names linked to one FIFO meet, a FIFO renamed stays the same pipe.  The pipe goes when its last
end closes, with any bytes left in it, as Linux frees pipe_inode_info then.

fifo_open's rules: O_RDONLY waits until a writer has opened (not with O_NONBLOCK); O_WRONLY
waits until a reader has (with O_NONBLOCK and no reader: ENXIO); O_RDWR never waits.  A waiting
opener already counts as a reader or writer (so the partner does not wait for it in turn, and
a reader's read does not see end-of-file before the waiting writer wakes); it waits for the
partner's open counter to move, so a partner that opened and closed again still lets it go.

A signal that interrupts a waiting open (or a kill) takes the opener off the wait queue, and
with it the count its half-made end held (``OpenWait``); a restarted open counts again.

Not modelled: poll/epoll of an O_RDWR FIFO reports only the write side's readiness; fstat of an open FIFO shows
pipefs's mode 0600 and the FIFO's inode number (stat of its name shows the node as it is).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.kernel.files import Pipe, PipeEnd, WaitQueue
from emukern.kernel.sysret import BLOCK

if TYPE_CHECKING:
    from emukern.kernel.fs.vfs import Node
    from emukern.kernel.types import Kernel

ENXIO = 6
O_ACCMODE, O_RDONLY, O_WRONLY, O_RDWR, O_NONBLOCK = 3, 0, 1, 2, 0o4000


class OpenWait(WaitQueue):
    """The queue openers wait on for a partner.  A sleeper taken off it other than by a wake-up
    (a signal, or the task killed) gives its half-made end back: fifo_open's ERESTARTSYS path
    drops the count it took (put_pipe_info), and a restarted open takes it again."""

    def __init__(self, k: "Kernel", fifo: "Fifo") -> None:
        super().__init__("fifo_open")
        self.k = k
        self.fifo = fifo

    def remove(self, task: Any) -> None:
        super().remove(task)
        pending = getattr(task, "fifo_pending", None)
        if pending is not None and pending[0].fifo is self.fifo:
            task.fifo_pending = None
            now = self.k.cpus[task.cpu].now
            for wq in pending[0].on_close():
                self.k.sched.wake_queue(wq, now)


class Fifo:
    """A FIFO's pipe_inode_info: the pipe, the open counters (r_counter/w_counter) and the
    queue openers wait on for a partner."""

    def __init__(self, k: "Kernel", key: tuple[int, int], ino: int) -> None:
        self.key = key
        self.pipe = Pipe(ino=ino, pool=k.mem)
        self.r_counter = 0
        self.w_counter = 0
        self.open_wait = OpenWait(k, self)


class FifoEnd(PipeEnd):
    """An open FIFO: a pipe end, or both ends at once (O_RDWR)."""

    def __init__(self, fifo: Fifo, table: dict, acc: int, nonblock: bool, node: "Node") -> None:
        super().__init__(fifo.pipe, write=acc != 0, nonblock=nonblock)
        self.fifo = fifo
        self.table = table
        self.node = node
        self.both = acc == O_RDWR
        if self.both:
            self.readable = True
            fifo.pipe.readers += 1
            self.kind = "fifo-rw"
        else:
            self.kind = "fifo-w" if acc else "fifo-r"

    def on_close(self) -> list[WaitQueue]:
        wqs = super().on_close()
        if self.both:
            self.pipe.readers -= 1
            wqs.append(self.pipe.wwait)
        if self.pipe.readers == 0 and self.pipe.writers == 0 and self.table.get(self.fifo.key) is self.fifo:
            del self.table[self.fifo.key]          # the last end: the pipe and its bytes go
            self.pipe.free()
        return wqs


def _table(k: "Kernel") -> dict:
    table = getattr(k.vfs, "fifos", None)
    if table is None:
        table = k.vfs.fifos = {}
    return table


def fifo_open(k: "Kernel", cpu, task, node: "Node", flags: int, cloexec: bool) -> Any:
    """Open the FIFO ``node`` names (a host FIFO in the root: only its inode is looked at)."""
    assert node.host is not None
    try:
        s = node.host.lstat()
    except OSError as e:
        return -(e.errno or E.ENOENT)
    key = (s.st_dev, s.st_ino)
    table = _table(k)
    acc = flags & O_ACCMODE
    nonblock = bool(flags & O_NONBLOCK)
    pending = getattr(task, "fifo_pending", None)
    if pending is not None:
        task.fifo_pending = None
        end, seen = pending
        if end.fifo.key == key and table.get(key) is end.fifo and (end.readable, end.writable) == (acc != O_WRONLY, acc != 0):
            return _wait_for_partner(k, cpu, task, end, seen, cloexec)
        _drop(k, cpu, end)                       # a half-made end from an interrupted open
    fifo = table.get(key)
    if fifo is None:
        fifo = table[key] = Fifo(k, key, node.ino)
    p = fifo.pipe
    if acc == O_WRONLY and nonblock and p.readers == 0:
        if p.writers == 0:
            del table[key]
        return -ENXIO
    end = FifoEnd(fifo, table, acc, nonblock, node)
    if end.readable:
        fifo.r_counter += 1
    if end.writable:
        fifo.w_counter += 1
    k.sched.wake_queue(fifo.open_wait, cpu.now)  # wake_up_partner
    cpu.charge(k.cost.pipe_op)
    if acc == O_RDONLY and not nonblock and p.writers == 0:
        return _wait_for_partner(k, cpu, task, end, fifo.w_counter, cloexec)
    if acc == O_WRONLY and p.readers == 0:
        return _wait_for_partner(k, cpu, task, end, fifo.r_counter, cloexec)
    return _install(k, cpu, task, end, cloexec)



def _wait_for_partner(k: "Kernel", cpu, task, end: FifoEnd, seen: int, cloexec: bool) -> Any:
    """wait_for_partner: sleep until the other side's open counter moves past ``seen``."""
    fifo = end.fifo
    now = fifo.w_counter if not end.writable else fifo.r_counter
    if now != seen:
        return _install(k, cpu, task, end, cloexec)
    task.fifo_pending = (end, seen)
    k.sched.sleep_on(cpu, task, fifo.open_wait, "fifo_open")
    return BLOCK


def _install(k: "Kernel", cpu, task, end: FifoEnd, cloexec: bool) -> int:
    fd = task.files.install(end, cloexec=cloexec)
    if fd < 0:
        _drop(k, cpu, end)
    return fd


def _drop(k: "Kernel", cpu, end: FifoEnd) -> None:
    for wq in end.on_close():
        k.sched.wake_queue(wq, cpu.now)
