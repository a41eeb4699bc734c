"""pipe2 <-> fs/pipe.c.

``sys_pipe2`` makes a ``Pipe`` (kernel/files.py) and its two ends; ``_pipe_read`` and
``_pipe_write`` are pipe_read/pipe_write, called by read_write.py, copying a page at a time
under the pipe's mutex (``_pipe_lock``), which a task preempted inside the copy keeps held.  A
full pipe takes what fits (a short write), and writing with no reader raises SIGPIPE/EPIPE.
pipe2's O_NONBLOCK is kept on each end (``PipeEnd.nonblock``, also fcntl F_SETFL): an empty
pipe read or a full pipe written is EAGAIN instead of a sleep; O_CLOEXEC marks both descriptors
close-on-exec.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.kernel import preempt as P
from emukern.kernel.files import Pipe, PipeEnd
from emukern.kernel.fs import namei as fs_namei
from emukern.kernel.mm.uaccess import copy_from_user_chunk, copy_to_user_chunk
from emukern.kernel.signal import generate as signal_generate
from emukern.kernel.syscalls import O_CLOEXEC, O_NONBLOCK
from emukern.kernel.sysret import BLOCK

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def _pipe_lock(k: "Kernel", cpu, task, p: Pipe, why: str) -> bool:
    """__pipe_lock (mutex_lock): False (the task sleeps on the mutex) while another task holds
    it — one preempted inside pipe_read/pipe_write."""
    owner = p.mutex_owner
    if owner is not None and owner is not task and owner.alive:
        k.sched.sleep_on(cpu, task, p.lockwait, why)
        return False
    p.mutex_owner = task
    return True


def _pipe_unlock(k: "Kernel", cpu, p: Pipe) -> None:
    p.mutex_owner = None
    if p.lockwait.waiters:
        k.sched.wake_queue(p.lockwait, cpu.now)


def _pipe_read(k: "Kernel", cpu, task, p: Pipe, buf, count, res, nonblock: bool = False) -> Any:
    """pipe_read: a page at a time under pipe->mutex; no cond_resched() inside (only the full
    model preempts the copy), the mutex's might_sleep() at the top (voluntary).  An empty pipe
    with writers left is EAGAIN for an O_NONBLOCK reader, a sleep otherwise."""
    if not count:
        return 0                        # a zero-length read returns at once
    if P.fresh(res):
        if not p.buf:
            if p.writers == 0:
                return 0
            if nonblock:
                return -E.EAGAIN
            k.sched.sleep_on(cpu, task, p.rwait, "pipe_read")
            return BLOCK
        if P.preempt_point(k, cpu, task, P.MIGHT_RESCHED, "pipe_read"):
            return P.preempted(k, task, P.MIGHT_RESCHED)
        if not _pipe_lock(k, cpu, task, p, "pipe_lock"):
            return BLOCK
        cpu.charge(k.cost.pipe_op)

    def chunk(o: int, n: int) -> Any:
        n = min(n, len(p.buf))
        if n <= 0:
            return 0
        r = copy_to_user_chunk(k, cpu, task, buf + o, bytes(p.buf[:n]), res, "pipe_read")
        if r is P.PREEMPTED:
            return r
        del p.buf[:n]
        return n
    got = P.page_loop(k, cpu, task, res, count, chunk, P.IRQ, "pipe_read")
    if got is P.PREEMPTED:
        return got
    _pipe_unlock(k, cpu, p)
    k.sched.wake_queue(p.wwait, cpu.now)
    if got >= 0:
        cpu.charge(k.cost.syscall_body)
    return got


def _pipe_write(k: "Kernel", cpu, task, p: Pipe, buf, count, res, nonblock: bool = False) -> Any:
    """pipe_write: a page at a time under pipe->mutex (copy_page_from_iter per page), with no
    cond_resched() inside; a full pipe takes what fits (emukern's pipes give a short write),
    and is EAGAIN for an O_NONBLOCK writer when nothing fits."""
    if not count:
        return 0                        # a null write succeeds before any check
    if P.fresh(res):
        if p.readers == 0:
            signal_generate.force_sig(k, cpu, task, E.SIGPIPE, None, "write to a pipe with no readers")
            # (send_sig: a handler or SIG_IGN decides; the write itself fails with EPIPE)
            return -E.EPIPE
        if len(p.buf) >= 65536:
            if nonblock:
                return -E.EAGAIN
            k.sched.sleep_on(cpu, task, p.wwait, "pipe_write")
            return BLOCK
        if P.preempt_point(k, cpu, task, P.MIGHT_RESCHED, "pipe_write"):
            return P.preempted(k, task, P.MIGHT_RESCHED)
        if not _pipe_lock(k, cpu, task, p, "pipe_lock"):
            return BLOCK
        cpu.charge(k.cost.syscall_body + k.cost.pipe_op)

    def chunk(o: int, n: int) -> Any:
        n = min(n, 65536 - len(p.buf))
        if n <= 0:
            return 0
        data = copy_from_user_chunk(k, cpu, task, buf + o, n, res, "pipe_write")
        if data is P.PREEMPTED:
            return data
        p.buf += data
        return len(data)
    got = P.page_loop(k, cpu, task, res, count, chunk, P.IRQ, "pipe_write")
    if got is P.PREEMPTED:
        return got
    _pipe_unlock(k, cpu, p)
    if got > 0:
        k.sched.wake_queue(p.rwait, cpu.now)
    return got


def sys_pipe2(k: "Kernel", cpu, task, fds_ptr, flags, *a):
    if flags & ~(O_NONBLOCK | O_CLOEXEC):
        return -E.EINVAL
    if task.mm.find(fds_ptr) is None:
        return -E.EFAULT
    p = Pipe(ino=fs_namei.get_next_ino(k, cpu))
    nonblock, cloexec = bool(flags & O_NONBLOCK), bool(flags & O_CLOEXEC)
    rfd = task.files.install(PipeEnd(p, write=False, nonblock=nonblock), cloexec=cloexec)
    wfd = task.files.install(PipeEnd(p, write=True, nonblock=nonblock), cloexec=cloexec)
    task.mm.write(fds_ptr, rfd.to_bytes(4, "little") + wfd.to_bytes(4, "little"))
    cpu.charge(k.cost.pipe_op)
    return 0
