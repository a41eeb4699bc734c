"""pipe2 <-> fs/pipe.c.

``sys_pipe2`` makes a ``Pipe`` (kernel/files.py) and its two ends; ``pipe_read`` and
``pipe_write`` are the kernel's pipe_read/pipe_write for a new read(2)/write(2), called by
read_write.py: the checks (``_pipe_*_begin``), the copy a page at a time under the pipe's mutex
(``_pipe_lock``), which a task preempted inside the copy keeps held, and the wake-up
(``_pipe_*_end``).  A copy that fits one chunk is done in line; the rest, and a call continued
in a caller's progress record (readv/writev, a resumed preemption: ``_pipe_read``/``_pipe_write``),
go through the page loop.  A full pipe takes what fits (a short write), and writing with no
reader raises SIGPIPE/EPIPE.  pipe2's O_NONBLOCK is kept on each end (``PipeEnd.nonblock``, also
fcntl F_SETFL): an empty pipe read or a full pipe written is EAGAIN instead of a sleep; O_CLOEXEC
marks both descriptors close-on-exec.

A pipe's queued bytes are charged, a page at a time, to the machine's memory pool (Linux
allocates each buffer page with __GFP_ACCOUNT): a write the limit refuses takes what was charged
already, or fails with ENOMEM when it took nothing.  The per-user page count of
account_pipe_buffers is kept too (``pipe_user``): past fs.pipe-user-pages-soft an unprivileged
user's new pipes get 2 pages, past the hard limit pipe2 is ENFILE.  ``pipe_fcntl`` is
F_SETPIPE_SZ/F_GETPIPE_SZ (pipe_set_size), whose size above fs.pipe-max-size, or above the
user's page limits, is EPERM without CAP_SYS_RESOURCE, and EBUSY when the bytes queued do not
fit the new size.
"""
from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from emukern.errors import MemoryFault
from emukern.kernel import errno as E
from emukern.kernel import preempt as P
from emukern.kernel.cred import CAP_SYS_ADMIN, CAP_SYS_RESOURCE, capable, cred_of
from emukern.kernel.files import (
    PAGE_SIZE,
    PIPE_DEF_BUFFERS,
    PIPE_MAX_SIZE,
    PIPE_MIN_DEF_BUFFERS,
    Pipe,
    PipeEnd,
    PipeUser,
)
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


def _pipe_read_begin(k: "Kernel", cpu, task, p: Pipe, nonblock: bool) -> Any:
    """pipe_read up to its copy: None when the copy goes ahead (pipe->mutex held, the op
    charged), else what the call returns.  An empty pipe with writers left is EAGAIN for an
    O_NONBLOCK reader, a sleep otherwise; the mutex's might_sleep() comes first (voluntary)."""
    if not p.buf:
        if p.writers == 0:
            return 0
        if nonblock:
            return -E.EAGAIN
        k.sched.sleep_on(cpu, task, p.rwait, "pipe_read")
        return BLOCK
    if P.preempt_point(k, cpu, task, P.MIGHT_RESCHED, "pipe_read"):
        P.begin(task)                   # (the progress record the preemption is noted in)
        return P.preempted(k, task, P.MIGHT_RESCHED)
    if not _pipe_lock(k, cpu, task, p, "pipe_lock"):
        return BLOCK
    cpu.charge(k.cost.pipe_op)
    return None


def _pipe_read_end(k: "Kernel", cpu, p: Pipe, got: Any) -> Any:
    """pipe_read after its copy: the mutex dropped, writers woken (room was made)."""
    _pipe_unlock(k, cpu, p)
    k.sched.wake_queue(p.wwait, cpu.now)
    if got >= 0:
        cpu.charge(k.cost.syscall_body)
    return got


def _pipe_read_copy(k: "Kernel", cpu, task, p: Pipe, buf, count, res) -> Any:
    """pipe_read's copy, a page at a time (kernel/preempt.py's page_loop): no cond_resched()
    inside, so only the full model preempts it; continues from ``res``."""
    def chunk(o: int, n: int) -> Any:
        n = min(n, len(p.buf))
        if n <= 0:
            return 0
        r = copy_to_user_chunk(k, cpu, task, buf + o, bytes(p.buf[:n]), res, "pipe_read")
        if r is P.PREEMPTED:
            return r
        del p.buf[:n]
        p.settle()                      # the pages read empty are freed
        return n
    got = P.page_loop(k, cpu, task, res, count, chunk, P.IRQ, "pipe_read")
    if got is P.PREEMPTED:
        return got
    return _pipe_read_end(k, cpu, p, got)


def _pipe_read(k: "Kernel", cpu, task, p: Pipe, buf, count, res, nonblock: bool = False) -> Any:
    """pipe_read inside a caller's progress record (readv, a call continued after a
    preemption): the checks on its first entry, then the page loop."""
    if not count:
        return 0                        # a zero-length read returns at once
    if P.fresh(res):
        r = _pipe_read_begin(k, cpu, task, p, nonblock)
        if r is not None:
            return r
    return _pipe_read_copy(k, cpu, task, p, buf, count, res)


def pipe_read(k: "Kernel", cpu, task, p: Pipe, buf, count, nonblock: bool) -> Any:
    """read(2) of a pipe, not continuing a preempted call: _pipe_read under a progress record
    of its own (run_long's), except that the commonest read -- one the page loop would finish
    in its first chunk with a scalar copy no interrupt can stop (a shell's one-byte reads) --
    is done here in line, without the loop and its per-call closures, and (a scalar copy) without
    the record.  It takes the same steps in the same order, charges the same cycles and ends
    the same way as that single chunk: the arch's kernel-mode vector copy is offered the bytes
    first, with a record (a preemptible one may keep its loop there).  A second page or the
    full preemption model (an interrupt inside the copy) goes through the loop."""
    if not count:
        return 0
    r = _pipe_read_begin(k, cpu, task, p, nonblock)
    if r is not None:
        return r                        # (a preemption left its record in task.resume)
    n = len(p.buf)
    if (count > PAGE_SIZE and n >= PAGE_SIZE) or k.config.preempt == "full":
        return _pipe_rw_long(k, cpu, task, lambda res: _pipe_read_copy(k, cpu, task, p, buf, count, res))
    if count < n:
        n = count
    vu = k.arch.vector_usercopy
    try:
        if vu is not None:
            res = P.begin(task)         # (the vector copy may keep its loop in the record)
            took = vu(cpu, task, buf, n, bytes(p.buf[:n]), res)
            if took is P.PREEMPTED:
                return P.preempted(k, task, P.IRQ)
            if took is None:            # not taken: the scalar copy below
                task.mm.write(buf, p.buf[:n])
                cpu.charge(k.cost.syscall_per_byte * n)
            P.finish(task)
        else:
            task.mm.write(buf, p.buf[:n])
            cpu.charge(k.cost.syscall_per_byte * n)
    except MemoryFault:
        P.finish(task)
        return _pipe_read_end(k, cpu, p, -E.EFAULT)
    del p.buf[:n]
    p.settle()                          # the pages read empty are freed
    return _pipe_read_end(k, cpu, p, n)


def _pipe_rw_long(k: "Kernel", cpu, task, body: Any) -> Any:
    """A pipe copy the general loop does, under a fresh progress record (run_long's)."""
    r = body(P.begin(task))
    if r is not P.PREEMPTED:
        P.finish(task)
    return r


def _pipe_write_begin(k: "Kernel", cpu, task, p: Pipe, nonblock: bool) -> Any:
    """pipe_write up to its copy: None when the copy goes ahead (mutex held, charged), else
    what the call returns.  No reader: SIGPIPE and EPIPE; a full pipe is EAGAIN for an
    O_NONBLOCK writer, a sleep otherwise."""
    if p.readers == 0:
        signal_generate.force_sig(k, cpu, task, E.SIGPIPE, None, "write to a pipe with no readers")
        # (send_sig: a handler or SIG_IGN decides; the write itself fails with EPIPE)
        return -E.EPIPE
    if len(p.buf) >= p.size:
        if nonblock:
            return -E.EAGAIN
        k.sched.sleep_on(cpu, task, p.wwait, "pipe_write")
        return BLOCK
    if P.preempt_point(k, cpu, task, P.MIGHT_RESCHED, "pipe_write"):
        P.begin(task)
        return P.preempted(k, task, P.MIGHT_RESCHED)
    if not _pipe_lock(k, cpu, task, p, "pipe_lock"):
        return BLOCK
    cpu.charge(k.cost.syscall_body + k.cost.pipe_op)
    return None


def _pipe_write_end(k: "Kernel", cpu, p: Pipe, got: Any) -> Any:
    """pipe_write after its copy: the mutex dropped, readers woken when bytes went in."""
    _pipe_unlock(k, cpu, p)
    if got > 0:
        k.sched.wake_queue(p.rwait, cpu.now)
    return got


def _pipe_write_copy(k: "Kernel", cpu, task, p: Pipe, buf, count, res) -> Any:
    """pipe_write's copy, a page at a time (copy_page_from_iter per page), with no
    cond_resched() inside; a full pipe takes what fits (a short write)."""
    refused = False

    def chunk(o: int, n: int) -> Any:
        nonlocal refused
        n = min(n, p.size - len(p.buf))
        if n <= 0:
            return 0
        if not p.charge_to(len(p.buf) + n):
            refused = True              # alloc_page failed: the write ends here
            return 0
        try:
            data = copy_from_user_chunk(k, cpu, task, buf + o, n, res, "pipe_write")
        except MemoryFault:
            p.settle()                  # nothing was queued: the page charged for it goes back
            raise
        if data is P.PREEMPTED:
            p.settle()
            return data
        p.buf += data
        p.settle()                      # (a faulting copy takes fewer bytes than were charged)
        return len(data)
    got = P.page_loop(k, cpu, task, res, count, chunk, P.IRQ, "pipe_write")
    if got is P.PREEMPTED:
        return got
    if got == 0 and refused:
        got = -E.ENOMEM
    return _pipe_write_end(k, cpu, p, got)


def _pipe_write(k: "Kernel", cpu, task, p: Pipe, buf, count, res, nonblock: bool = False) -> Any:
    """pipe_write inside a caller's progress record (writev, a call continued after a
    preemption): the checks on its first entry, then the page loop."""
    if not count:
        return 0                        # a null write succeeds before any check
    if P.fresh(res):
        r = _pipe_write_begin(k, cpu, task, p, nonblock)
        if r is not None:
            return r
    return _pipe_write_copy(k, cpu, task, p, buf, count, res)


def pipe_write(k: "Kernel", cpu, task, p: Pipe, buf, count, nonblock: bool) -> Any:
    """write(2) to a pipe, not continuing a preempted call: as :func:`pipe_read`, a write of
    at most a page with a scalar copy no interrupt can stop (a shell's echo) is done in line,
    the same steps, charges and ends as the page loop's single chunk; the rest goes through
    the loop under a progress record of its own."""
    if not count:
        return 0
    r = _pipe_write_begin(k, cpu, task, p, nonblock)
    if r is not None:
        return r
    n = p.size - len(p.buf)
    if count > PAGE_SIZE or k.config.preempt == "full" or n <= 0:
        return _pipe_rw_long(k, cpu, task, lambda res: _pipe_write_copy(k, cpu, task, p, buf, count, res))
    if count < n:
        n = count
    if not p.charge_to(len(p.buf) + n):
        return _pipe_write_end(k, cpu, p, -E.ENOMEM)    # alloc_page failed before any byte
    vu = k.arch.vector_usercopy
    try:
        if vu is not None:
            res = P.begin(task)
            data = vu(cpu, task, buf, n, None, res)
            if data is P.PREEMPTED:
                p.settle()
                return P.preempted(k, task, P.IRQ)
            if data is None:
                data = task.mm.read(buf, n)
                cpu.charge(k.cost.syscall_per_byte * n)
            P.finish(task)
        else:
            data = task.mm.read(buf, n)
            cpu.charge(k.cost.syscall_per_byte * n)
    except MemoryFault:
        P.finish(task)
        p.settle()                      # nothing was queued: the page charged for it goes back
        return _pipe_write_end(k, cpu, p, -E.EFAULT)
    p.buf += data
    p.settle()                          # (a faulting copy takes fewer bytes than were charged)
    got = len(data)
    return _pipe_write_end(k, cpu, p, got)


def sys_pipe2(k: "Kernel", cpu, task, fds_ptr, flags, *a):
    if flags & ~(O_NONBLOCK | O_CLOEXEC):
        return -E.EINVAL
    if task.mm.find(fds_ptr) is None:
        return -E.EFAULT
    p = alloc_pipe_info(k, task, fs_namei.get_next_ino(k, cpu))
    if p is None:
        return -E.ENFILE                # get_pipe_inode failed: create_pipe_files' ENFILE
    nonblock, cloexec = bool(flags & O_NONBLOCK), bool(flags & O_CLOEXEC)
    rend, wend = PipeEnd(p, write=False, nonblock=nonblock), PipeEnd(p, write=True, nonblock=nonblock)
    rfd = task.files.install(rend, cloexec=cloexec)
    wfd = task.files.install(wend, cloexec=cloexec) if rfd >= 0 else rfd
    if rfd < 0 or wfd < 0:              # no descriptor for one end: neither is kept
        if rfd >= 0:
            task.files.close(rfd)
        else:
            rend.on_close()
        wend.on_close()                 # (the last end frees the pipe and its accounting)
        return wfd
    task.mm.write(fds_ptr, rfd.to_bytes(4, "little") + wfd.to_bytes(4, "little"))
    cpu.charge(k.cost.pipe_op)
    return 0


# ---- pipe buffer accounting (fs/pipe.c alloc_pipe_info, pipe_set_size) ---------------------------
F_SETPIPE_SZ, F_GETPIPE_SZ = 1031, 1032      # (F_LINUX_SPECIFIC_BASE + 7, + 8)

# each machine's per-user pipe page counts, beside its memory pool
_USERS: "weakref.WeakKeyDictionary[Any, PipeUser]" = weakref.WeakKeyDictionary()


def pipe_user(k: "Kernel") -> PipeUser:
    users = _USERS.get(k.mem)
    if users is None:
        users = _USERS[k.mem] = PipeUser()
    return users


def _unprivileged(task) -> bool:
    """pipe_is_unprivileged_user: neither CAP_SYS_RESOURCE nor CAP_SYS_ADMIN."""
    return not (capable(task, CAP_SYS_RESOURCE) or capable(task, CAP_SYS_ADMIN))


def alloc_pipe_info(k: "Kernel", task, ino: int) -> Pipe | None:
    """alloc_pipe_info: a pipe of 16 pages, fewer when pipe-max-size is below that; 2 pages once
    an unprivileged user's pipes hold more than pipe-user-pages-soft; None (ENFILE) past the
    hard limit."""
    bufs = PIPE_DEF_BUFFERS
    if bufs * PAGE_SIZE > PIPE_MAX_SIZE and _unprivileged(task):
        bufs = PIPE_MAX_SIZE // PAGE_SIZE
    users, uid = pipe_user(k), cred_of(task).uid
    n = users.account(uid, 0, bufs)
    if users.too_many_soft(n) and _unprivileged(task):
        n = users.account(uid, bufs, PIPE_MIN_DEF_BUFFERS)
        bufs = PIPE_MIN_DEF_BUFFERS
    if users.too_many_hard(n) and _unprivileged(task):
        users.account(uid, bufs, 0)
        return None
    return Pipe(ino=ino, max_usage=bufs, pool=k.mem, users=users, uid=uid, nr_accounted=bufs)


def round_pipe_size(size: int) -> int:
    """round_pipe_size: a page at least, the next power of two, 0 (EINVAL) above 2 GiB."""
    if size > 1 << 31:
        return 0
    if size < PAGE_SIZE:
        return PAGE_SIZE
    return 1 << (size - 1).bit_length()


def pipe_set_size(k: "Kernel", cpu, task, p: Pipe, arg: int) -> int:
    """pipe_set_size: the new size in bytes, or -errno."""
    size = round_pipe_size(arg & 0xFFFFFFFF)
    slots = size // PAGE_SIZE
    if slots == 0:
        return -E.EINVAL
    if slots > p.max_usage and size > PIPE_MAX_SIZE and _unprivileged(task):
        return -E.EPERM
    users = p.users if p.users is not None else pipe_user(k)
    n = users.account(p.uid, p.nr_accounted, slots)
    if slots > p.nr_accounted and (users.too_many_hard(n) or users.too_many_soft(n)) \
            and _unprivileged(task):
        users.account(p.uid, slots, p.nr_accounted)
        return -E.EPERM
    # pipe_resize_ring: the bytes queued must fit the new ring (a page per slot)
    if -(-len(p.buf) // PAGE_SIZE) > slots:
        users.account(p.uid, slots, p.nr_accounted)
        return -E.EBUSY
    p.users, p.max_usage, p.nr_accounted = users, slots, slots
    k.sched.wake_queue(p.wwait, cpu.now)     # a larger ring has room for writers
    return p.size


def pipe_fcntl(k: "Kernel", cpu, task, f, cmd: int, arg: int) -> int:
    """pipe_fcntl: F_SETPIPE_SZ and F_GETPIPE_SZ; a file that is not a pipe is EBADF."""
    if not isinstance(f, PipeEnd):
        return -E.EBADF
    cpu.charge(k.cost.syscall_body)
    if cmd == F_SETPIPE_SZ:
        return pipe_set_size(k, cpu, task, f.pipe, arg)
    return f.pipe.size
