"""splice, tee, vmsplice, and the pipe/socket ends of sendfile <-> fs/splice.c.

emukern's pipes hold bytes, not pages, so "moving a page" is moving bytes: splice out of a pipe
takes them from its front, into a pipe appends them, tee copies them without taking.  What a
call may move at once follows Linux's: into a pipe at most its free room (one wait for room,
then one read: a short count, as splice_file_to_pipe), out of a pipe what it holds.

Which files take part (the ``f_op`` a file has or lacks decides EINVAL):
- splice_read (a source that is not a pipe): regular files (host files, memfds and /dev/shm
  files), /proc files, /dev/zero, and AF_UNIX sockets (``File.splice_read``);
- splice_write (a sink that is not a pipe): regular files, /dev/null, the first process's
  stdout/stderr, and AF_UNIX sockets (``File.splice_write``).

Blocking is emukern's usual: nothing has moved when a call sleeps (it returns BLOCK and runs
again from the start when woken), so no partial progress has to be kept.  A pipe whose mutex a
task preempted inside pipe_read/pipe_write holds makes the caller sleep on that mutex first.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emukern.errors import MemoryFault
from emukern.kernel.mm.secretmem import range_has_secretmem
from emukern.kernel import errno as E
from emukern.kernel.files import File, OutputFile, Pipe, PipeEnd
from emukern.kernel.fs.file import DevNull, DevZero, DirFile, HostFile, MemFile, VfsFile
from emukern.kernel.fs.uapi import _s32
from emukern.kernel.mm.uaccess import copy_from_user, copy_to_user
from emukern.kernel.signal import generate as signal_generate
from emukern.kernel.syscalls import pipe as syscalls_pipe
from emukern.kernel.syscalls import read_write as syscalls_read_write
from emukern.kernel.sysret import BLOCK, U64

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

SPLICE_F_MOVE, SPLICE_F_NONBLOCK, SPLICE_F_MORE, SPLICE_F_GIFT = 1, 2, 4, 8
SPLICE_F_ALL = SPLICE_F_MOVE | SPLICE_F_NONBLOCK | SPLICE_F_MORE | SPLICE_F_GIFT
PIPE_SIZE = 65536                       # the pipe's room (16 pages, as pipe_write's limit)
MAX_RW_COUNT = 0x7FFFF000
UIO_MAXIOV = 1024
O_APPEND = 0o2000


def get_pipe_info(f: Any) -> Pipe | None:
    return f.pipe if isinstance(f, PipeEnd) else None


def _room(p: Pipe) -> int:
    return p.room()


def _lock(k: "Kernel", cpu, task, *pipes: Pipe) -> bool:
    """pipe_lock (pipe_double_lock) then straight back: False after sleeping on the mutex of a
    pipe that another task, preempted inside pipe_read/pipe_write, still holds."""
    for p in pipes:
        if not syscalls_pipe._pipe_lock(k, cpu, task, p, "pipe_lock"):
            return False
        syscalls_pipe._pipe_unlock(k, cpu, p)
    return True


def wait_for_space(k: "Kernel", cpu, task, p: Pipe, nonblock: bool) -> Any:
    """wait_for_space: 0 when the pipe has room; EPIPE (and SIGPIPE) with no reader left;
    EAGAIN or a sleep when it is full."""
    if p.readers == 0:
        signal_generate.force_sig(k, cpu, task, E.SIGPIPE, None, "splice into a pipe with no readers")
        return -E.EPIPE
    if _room(p) > 0:
        return 0
    if nonblock:
        return -E.EAGAIN
    k.sched.sleep_on(cpu, task, p.wwait, "wait_for_space")
    return BLOCK


def _wait_for_data(k: "Kernel", cpu, task, p: Pipe, nonblock: bool) -> Any:
    """splice_from_pipe_next / ipipe_prep: 0 when the pipe holds bytes, 1 at end of input (no
    writer left: the call returns 0), EAGAIN or a sleep while it is empty."""
    if p.buf:
        return 0
    if p.writers == 0:
        return 1
    if nonblock:
        return -E.EAGAIN
    k.sched.sleep_on(cpu, task, p.rwait, "pipe_wait_readable")
    return BLOCK


def _pipe_put(k: "Kernel", cpu, p: Pipe, data: bytes) -> None:
    # the pages are charged as pipe_write's are; a refusal is not undone here (the bytes are
    # in the kernel already, at most the pipe's size): they go uncharged until read
    p.charge_to(len(p.buf) + len(data))
    p.buf += data
    if data:
        k.sched.wake_queue(p.rwait, cpu.now)


def _pipe_take(k: "Kernel", cpu, p: Pipe, n: int) -> None:
    del p.buf[:n]
    p.settle()
    if n:
        k.sched.wake_queue(p.wwait, cpu.now)


def has_splice_read(f: Any) -> bool:
    if isinstance(f, (HostFile, MemFile, DevZero)):
        return True
    return type(f).splice_read is not File.splice_read


def can_pread(f: Any) -> bool:
    """FMODE_PREAD / FMODE_PWRITE: files with a position (not pipes, sockets or terminals)."""
    return isinstance(f, VfsFile) and not isinstance(f, DirFile)


def splice_read(k: "Kernel", cpu, task, f: Any, off: int, count: int, nonblock: bool) -> Any:
    """The source's ``->splice_read``: bytes, -errno, BLOCK; None when it has none."""
    if isinstance(f, (HostFile, MemFile, DevZero)):
        return f.pread(count, off)
    return f.splice_read(k, cpu, task, count, nonblock)


def splice_write(k: "Kernel", cpu, task, f: Any, data: bytes, off: int, nonblock: bool) -> Any:
    """The sink's ``->splice_write``: a count, -errno or BLOCK; None when it has none."""
    if isinstance(f, OutputFile):
        return syscalls_read_write._stdio_write(k, cpu, task, f, data)
    if isinstance(f, DevNull):
        return len(data)                        # splice_write_null
    if isinstance(f, VfsFile) and not isinstance(f, (DirFile, MemFile)):
        return f.pwrite(data, off)
    return f.splice_write(k, cpu, task, data, nonblock)


def _charge(k: "Kernel", cpu, done: int) -> None:
    cpu.charge(k.cost.pipe_op + k.cost.syscall_body * (done // 4096))


# ---- the three directions of do_splice ----------------------------------------------------
def splice_pipe_to_pipe(k: "Kernel", cpu, task, ip: Pipe, op: Pipe, length: int, nonblock: bool) -> Any:
    if not _lock(k, cpu, task, ip, op):
        return BLOCK
    if op.readers == 0:
        signal_generate.force_sig(k, cpu, task, E.SIGPIPE, None, "splice into a pipe with no readers")
        return -E.EPIPE
    r = _wait_for_data(k, cpu, task, ip, nonblock)
    if r:
        return 0 if r == 1 else r
    r = wait_for_space(k, cpu, task, op, nonblock)
    if r:
        return r
    n = min(length, len(ip.buf), _room(op))
    data = bytes(ip.buf[:n])
    _pipe_take(k, cpu, ip, n)
    _pipe_put(k, cpu, op, data)
    _charge(k, cpu, n)
    return n


def splice_file_to_pipe(k: "Kernel", cpu, task, f: Any, op: Pipe, off: int, length: int,
                        nonblock: bool) -> Any:
    """splice_file_to_pipe: one wait for room, then one do_splice_read of at most that room."""
    if not _lock(k, cpu, task, op):
        return BLOCK
    r = wait_for_space(k, cpu, task, op, nonblock)
    if r:
        return r
    if not length:
        return 0
    if not has_splice_read(f):
        return -E.EINVAL
    data = splice_read(k, cpu, task, f, off, min(length, _room(op), MAX_RW_COUNT), nonblock)
    if not isinstance(data, (bytes, bytearray)):
        return data
    _pipe_put(k, cpu, op, bytes(data))
    _charge(k, cpu, len(data))
    return len(data)


def splice_pipe_to_file(k: "Kernel", cpu, task, ip: Pipe, f: Any, off: int, length: int,
                        nonblock: bool) -> Any:
    """do_splice_from: the sink takes bytes from the pipe's front (a file all of them; a full
    socket a short count).  An empty pipe: 0 with no writer left, else EAGAIN or a sleep."""
    if not _lock(k, cpu, task, ip):
        return BLOCK
    r = _wait_for_data(k, cpu, task, ip, nonblock)
    if r:
        return 0 if r == 1 else r
    data = bytes(ip.buf[:min(length, len(ip.buf))])
    # (a socket sink waits or not by its own O_NONBLOCK: splice_to_socket's MSG_DONTWAIT)
    n = splice_write(k, cpu, task, f, data, off, False)
    if n is None:
        return -E.EINVAL
    if not isinstance(n, int) or n <= 0:
        return n
    _pipe_take(k, cpu, ip, n)
    _charge(k, cpu, n)
    return n


def _has_splice_write(f: Any) -> bool:
    if isinstance(f, (OutputFile, DevNull)):
        return True
    if isinstance(f, VfsFile):
        return not isinstance(f, (DirFile, MemFile))
    return type(f).splice_write is not File.splice_write


def _read_off(task, ptr: int) -> int:
    return int.from_bytes(task.mm.read(ptr, 8), "little", signed=True)


def sys_splice(k: "Kernel", cpu, task, fd_in, off_in, fd_out, off_out, length, flags, *a):
    """SYSCALL_DEFINE6(splice) -> __do_splice -> do_splice."""
    cpu.charge(k.cost.syscall_body)
    length &= U64
    flags &= 0xFFFFFFFF
    if not length:
        return 0
    if flags & ~SPLICE_F_ALL:
        return -E.EINVAL
    fin, fout = task.files.get(_s32(fd_in)), task.files.get(_s32(fd_out))
    if fin is None or fout is None:
        return -E.EBADF
    ip, op = get_pipe_info(fin), get_pipe_info(fout)
    if (ip is not None and off_in) or (op is not None and off_out):
        return -E.ESPIPE
    try:
        oin = _read_off(task, off_in) if off_in else None
        oout = _read_off(task, off_out) if off_out else None
    except MemoryFault:
        return -E.EFAULT
    if not fin.readable or not fout.writable:
        return -E.EBADF
    length = min(length, MAX_RW_COUNT)
    nonblock = bool(flags & SPLICE_F_NONBLOCK)
    if ip is not None and op is not None:
        if ip is op:
            return -E.EINVAL                     # splicing a pipe into itself
        return splice_pipe_to_pipe(k, cpu, task, ip, op, length,
                                   nonblock or fin.nonblock or fout.nonblock)
    if ip is not None:
        if oout is not None and not can_pread(fout):
            return -E.EINVAL                     # no FMODE_PWRITE
        pos = oout if oout is not None else getattr(fout, "pos", 0)
        if isinstance(fout, VfsFile) and fout.flags & O_APPEND:
            return -E.EINVAL
        if pos < 0:
            return -E.EINVAL                     # rw_verify_area
        if not _has_splice_write(fout):
            return -E.EINVAL
        n = splice_pipe_to_file(k, cpu, task, ip, fout, pos, length, nonblock or fin.nonblock)
        return _advance(task, fout, off_out, pos, n)
    if op is not None:
        if oin is not None and not can_pread(fin):
            return -E.EINVAL                     # no FMODE_PREAD
        pos = oin if oin is not None else getattr(fin, "pos", 0)
        if pos < 0:
            return -E.EINVAL
        n = splice_file_to_pipe(k, cpu, task, fin, op, pos, length, nonblock or fout.nonblock)
        return _advance(task, fin, off_in, pos, n)
    return -E.EINVAL                             # neither end is a pipe


def _advance(task, f: Any, offp: int, pos: int, n: Any) -> Any:
    """The file position (or *off) moves by what was spliced; a socket or terminal has none."""
    if isinstance(n, int) and n > 0:
        if offp:
            task.mm.write(offp, (pos + n).to_bytes(8, "little", signed=True))
        elif can_pread(f):
            f.pos = pos + n
    return n


def sys_tee(k: "Kernel", cpu, task, fd_in, fd_out, length, flags, *a):
    """tee -> do_tee -> link_pipe: the input pipe's bytes are copied, not taken."""
    cpu.charge(k.cost.syscall_body)
    length &= U64
    if flags & 0xFFFFFFFF & ~SPLICE_F_ALL:
        return -E.EINVAL
    if not length:
        return 0
    fin, fout = task.files.get(_s32(fd_in)), task.files.get(_s32(fd_out))
    if fin is None or fout is None:
        return -E.EBADF
    if not fin.readable or not fout.writable:
        return -E.EBADF
    ip, op = get_pipe_info(fin), get_pipe_info(fout)
    if ip is None or op is None or ip is op:
        return -E.EINVAL
    nonblock = bool(flags & SPLICE_F_NONBLOCK) or fin.nonblock or fout.nonblock
    if not _lock(k, cpu, task, ip, op):
        return BLOCK
    r = _wait_for_data(k, cpu, task, ip, nonblock)
    if r:
        return 0 if r == 1 else r
    r = wait_for_space(k, cpu, task, op, nonblock)
    if r:
        return r
    n = min(length, len(ip.buf), _room(op), MAX_RW_COUNT)
    _pipe_put(k, cpu, op, bytes(ip.buf[:n]))
    _charge(k, cpu, n)
    return n


def _iovecs(task, iov: int, nr: int) -> list[tuple[int, int]] | int:
    """import_iovec: EINVAL past UIO_MAXIOV, EFAULT for an unreadable array."""
    if nr > UIO_MAXIOV:
        return -E.EINVAL
    try:
        raw = task.mm.read(iov, 16 * nr) if nr else b""
    except MemoryFault:
        return -E.EFAULT
    vec = [(int.from_bytes(raw[16 * i:16 * i + 8], "little"), int.from_bytes(raw[16 * i + 8:16 * i + 16], "little"))
           for i in range(nr)]
    total = 0
    for _b, n in vec:
        if n >> 63:
            return -E.EINVAL
        total += n
    return vec if total <= 1 << 63 else -E.EINVAL


def sys_vmsplice(k: "Kernel", cpu, task, fd, iov, nr_segs, flags, *a):
    """vmsplice: user memory into a pipe's write end (vmsplice_to_pipe: one wait for room, then
    what fits) or out of its read end into user memory (vmsplice_to_user).  Only
    SPLICE_F_NONBLOCK makes it non-blocking, not the pipe's O_NONBLOCK."""
    cpu.charge(k.cost.syscall_body)
    if flags & 0xFFFFFFFF & ~SPLICE_F_ALL:
        return -E.EINVAL
    f = task.files.get(_s32(fd))
    if f is None or not (f.writable or f.readable):
        return -E.EBADF
    vec = _iovecs(task, iov, nr_segs & 0xFFFFFFFFFFFFFFFF)
    if isinstance(vec, int):
        return vec
    total = sum(n for _b, n in vec)
    if not total:
        return 0
    p = get_pipe_info(f)
    if p is None:
        return -E.EBADF
    nonblock = bool(flags & SPLICE_F_NONBLOCK)
    if not _lock(k, cpu, task, p):
        return BLOCK
    if f.writable:
        r = wait_for_space(k, cpu, task, p, nonblock)
        if r:
            return r
        done = 0
        try:
            for base, n in vec:
                take = min(n, _room(p))
                if take <= 0:
                    break
                if range_has_secretmem(task.mm, base, take):
                    raise MemoryFault(base, "r")     # iov_iter_get_pages cannot pin secretmem
                data = copy_from_user(k, cpu, task, base, take)
                _pipe_put(k, cpu, p, data)
                done += take
        except MemoryFault:
            return done or -E.EFAULT
        _charge(k, cpu, done)
        return done
    r = _wait_for_data(k, cpu, task, p, nonblock)
    if r:
        return 0 if r == 1 else r
    done = 0
    try:
        for base, n in vec:
            take = min(n, len(p.buf))
            if take <= 0:
                break
            copy_to_user(k, cpu, task, base, bytes(p.buf[:take]))
            _pipe_take(k, cpu, p, take)
            done += take
    except MemoryFault:
        return done or -E.EFAULT
    _charge(k, cpu, done)
    return done
