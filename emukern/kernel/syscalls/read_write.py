"""read / write and their vector, positioned and in-kernel copy forms <-> fs/read_write.c.

``_do_read``/``_do_write`` dispatch on the file kind (pipe, host file, /dev files, eventfd,
sysctl, plug-in kinds); ``_read_iter``/``_write_iter`` are the long loops for pipes and host
files, which a preemption may stop midway and which resume from a progress record
(kernel/preempt.py).  ``_each_iov`` runs readv/writev over the iovecs; the module also holds
lseek, the pread/pwrite and preadv/pwritev(2) calls, sendfile and copy_file_range.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.kernel import preempt as P
from emukern.kernel.fs.poll import EventFdFile
from emukern.kernel.files import OutputFile, PipeEnd, StdinFile, SysctlFile
from emukern.kernel.fs import EOVERFLOW
from emukern.kernel.fs import meta as fs_meta
from emukern.kernel.fs.file import DevNull, DevZero, DirFile, HostFile, VfsFile, write_kernel_bytes
from emukern.kernel.fs.meta import MAX_LFS, _copy_loop, _s64
from emukern.kernel.mm.uaccess import copy_from_user, copy_from_user_chunk, copy_to_user, copy_to_user_chunk
from emukern.kernel.signal import generate as signal_generate
from emukern.kernel.syscalls import eventpoll as syscalls_eventpoll
from emukern.kernel.syscalls import pipe as syscalls_pipe
from emukern.kernel.syscalls import splice as syscalls_splice
from emukern.kernel.syscalls import sys as syscalls_sys
from emukern.kernel.syscalls import inotify as syscalls_inotify
from emukern.kernel.fs.uapi import _s32
from emukern.kernel.sysret import U64, s64
from emukern.kernel.fs.file import MAX_IO

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


# ---- files -----------------------------------------------------------------------------------
def sys_write(k: "Kernel", cpu, task, fd, buf, count, *a):
    return _do_write(k, cpu, task, fd, buf, count)


def _do_write(k: "Kernel", cpu, task, fd, buf, count, res=None, off=None):
    f = task.files.get(s64(fd))
    if f is None or not f.writable:
        return -E.EBADF
    if isinstance(f, EventFdFile):
        return syscalls_eventpoll.eventfd_write(k, cpu, task, f, buf, count & U64)
    count &= U64
    if not k.arch.access_ok(task, buf, count):
        return -E.EFAULT                    # vfs_write's access_ok, a zero count included
    r = f.kernel_write(k, cpu, task, buf, count)     # a plug-in kind (File.kernel_write)
    if r is not None:
        return r
    if count > 1 << 31:
        count = 1 << 31
    if isinstance(f, PipeEnd) and res is None and task.resume is None:
        return syscalls_pipe.pipe_write(k, cpu, task, f.pipe, buf, count, f.nonblock)
    if isinstance(f, (PipeEnd, HostFile)):
        # the long loops a preemption can stop midway (kernel/preempt.py)
        return P.run_long(task, res, lambda r: _write_iter(k, cpu, task, f, buf, count, r, off))
    data = copy_from_user(k, cpu, task, buf, count)     # charges the copy itself
    cpu.charge(k.cost.syscall_body)
    if isinstance(f, OutputFile):
        return _stdio_write(k, cpu, task, f, data)
    n = write_kernel_bytes(f, data, off)
    if n is not None:
        return n
    if isinstance(f, SysctlFile):
        from emukern.kernel.sysctl import proc_sys_write
        return proc_sys_write(f, data)
    return -E.EBADF


def _stdio_write(k: "Kernel", cpu, task, f: OutputFile, data: bytes) -> int:
    """The first process's stdout/stderr: the host's own descriptor under ``emukern run`` (a
    host error is the guest's errno, EPIPE with SIGPIPE as pipe_write raises it), else the
    capture buffer and its echo stream (an echo stream's own error is the guest's errno too,
    never an emukern crash)."""
    if f.host_fd is not None:
        n = f.host_write(data)
    else:
        try:
            n = write_kernel_bytes(f, data, None) or 0
        except OSError as exc:
            n = -(exc.errno or E.EIO)
    if n == -E.EPIPE:
        signal_generate.force_sig(k, cpu, task, E.SIGPIPE, None, "write to a closed pipe (host)")
    return n


def _write_iter(k: "Kernel", cpu, task, f, buf, count, res, off=None):
    """generic_perform_write (a host file: a page at a time, cond_resched() after each) or
    pipe_write; continues from ``res`` when the call was preempted inside."""
    if isinstance(f, PipeEnd):
        return syscalls_pipe._pipe_write(k, cpu, task, f.pipe, buf, count, res, f.nonblock)
    if P.fresh(res):
        cpu.charge(k.cost.syscall_body)
        fs_meta.file_update_time(k, cpu, f.node, f)      # file_modified: mtime/ctime = now
        syscalls_inotify.fsnotify(k, cpu, f.node.host, syscalls_inotify.IN_MODIFY)

    def chunk(o: int, n: int) -> Any:
        data = copy_from_user_chunk(k, cpu, task, buf + o, n, res, "write")
        if data is P.PREEMPTED:
            return data
        return f.write(data) if off is None else f.pwrite(data, off + o)
    return P.page_loop(k, cpu, task, res, count, chunk, P.COND_RESCHED, "generic_perform_write")


def sys_read(k: "Kernel", cpu, task, fd, buf, count, *a):
    return _do_read(k, cpu, task, fd, buf, count)


def _do_read(k: "Kernel", cpu, task, fd, buf, count, res=None, off=None):
    f = task.files.get(s64(fd))
    if f is None or not f.readable or type(f) is VfsFile:
        # (a bare VfsFile is what an O_PATH open installs: a descriptor that only names a
        # path, FMODE_PATH, which fdget_pos refuses to read through)
        return -E.EBADF
    if isinstance(f, EventFdFile):
        return syscalls_eventpoll.eventfd_read(k, cpu, task, f, buf, count & U64)
    count &= U64
    if not k.arch.access_ok(task, buf, count):
        return -E.EFAULT                    # vfs_read's access_ok, a zero count included
    if count and task.mm.find(buf) is None:
        return -E.EFAULT
    r = f.kernel_read(k, cpu, task, buf, count)      # a plug-in kind (File.kernel_read)
    if r is not None:
        return r
    if isinstance(f, PipeEnd):
        if res is None and task.resume is None:     # a new read(2): no progress record yet
            return syscalls_pipe.pipe_read(k, cpu, task, f.pipe, buf, count, f.nonblock)
        return P.run_long(task, res, lambda r: syscalls_pipe._pipe_read(k, cpu, task, f.pipe, buf, count, r,
                                                                                  f.nonblock))
    if isinstance(f, (HostFile, DevZero)) and count:
        return P.run_long(task, res, lambda r: _read_iter(k, cpu, task, f, buf, count, r, off))
    if isinstance(f, StdinFile):
        data = f.take(count)
    elif isinstance(f, VfsFile):
        got = f.read(count) if off is None else f.pread(count, off)
        if isinstance(got, int):
            return got
        data = got
    elif isinstance(f, SysctlFile):
        text = f.entry.render()
        data = text[f.pos: f.pos + count]
        f.pos += len(data)
    else:
        return -E.EBADF
    copy_to_user(k, cpu, task, buf, data)               # charges the copy itself
    cpu.charge(k.cost.syscall_body)
    return len(data)


def _read_iter(k: "Kernel", cpu, task, f, buf, count, res, off=None):
    """filemap_read (a host file: cond_resched() before each batch of up to 31 pages) or
    read_iter_zero (/dev/zero: cond_resched() after each page), a page per chunk."""
    if P.fresh(res):
        cpu.charge(k.cost.syscall_body)
    count = min(count, MAX_IO)

    def chunk(o: int, n: int) -> Any:
        if res.part is not None:                 # the page read before the preemption
            data = bytes(res.part)
        else:
            got = f.read(n) if off is None else f.pread(n, off + o)
            if isinstance(got, int):
                return got
            data = got
        if not data:
            return 0
        # (/dev/zero fills user memory with clear_user: never kernel-mode vector)
        r = copy_to_user_chunk(k, cpu, task, buf + o, data, res, "read", not isinstance(f, DevZero))
        if r is P.PREEMPTED:
            res.part = bytearray(data)
            return r
        res.part = None
        return len(data)
    batch = P.FOLIO_BATCH if isinstance(f, HostFile) else 1
    return P.page_loop(k, cpu, task, res, count, chunk, P.COND_RESCHED,
                       "filemap_read" if batch > 1 else "read_iter_zero", pages_per_point=batch)


# ---- reading files and directories ------------------------------------------------------------
def sys_pread64(k: "Kernel", cpu, task, fd, buf, count, off, *a):
    f = task.files.get(_s32(fd))
    if f is None or not f.readable:
        return -E.EBADF
    if isinstance(f, SysctlFile):
        # a /proc/sys file is opened with FMODE_PREAD (proc_sys_open is not nonseekable_open):
        # proc_sys_read renders the value and copies from the offset; f_pos is untouched
        if off >> 63:
            return -E.EINVAL
        data = f.entry.render()[off: off + min(count & U64, MAX_IO)]
        copy_to_user(k, cpu, task, buf, data)
        cpu.charge(k.cost.syscall_body)
        return len(data)
    if not isinstance(f, VfsFile) or isinstance(f, DirFile) or getattr(f, "no_pread", False):
        return -E.ESPIPE if not isinstance(f, DirFile) else -E.EISDIR
    if off >> 63:
        return -E.EINVAL
    if isinstance(f, HostFile) and count & U64:       # filemap_read's loop (kernel/preempt.py)
        if task.mm.find(buf) is None:
            return -E.EFAULT
        return P.run_long(task, None, lambda r: _read_iter(k, cpu, task, f, buf, count & U64, r, off))
    data = f.pread(count & U64, off)
    if isinstance(data, int):
        return data
    copy_to_user(k, cpu, task, buf, data)              # charges the copy itself
    cpu.charge(k.cost.syscall_body)
    return len(data)


def sys_pwrite64(k: "Kernel", cpu, task, fd, buf, count, off, *a):
    f = task.files.get(_s32(fd))
    if f is None or not f.writable:
        return -E.EBADF
    if isinstance(f, SysctlFile):
        # FMODE_PWRITE as for any proc file: the handler runs at ``off`` (kiocb->ki_pos), so
        # under sysctl_writes_strict=1 an offset other than 0 changes nothing and returns 0
        # (proc_first_pos_non_zero_ignore), and offset 0 writes whatever f_pos is
        if off >> 63:
            return -E.EINVAL
        from emukern.kernel.sysctl import proc_sys_write
        data = copy_from_user(k, cpu, task, buf, min(count & U64, 1 << 24))
        cpu.charge(k.cost.syscall_body)
        return proc_sys_write(f, data, off)
    if not isinstance(f, VfsFile) or getattr(f, "no_pread", False):
        return -E.ESPIPE
    if off >> 63:
        return -E.EINVAL
    if isinstance(f, HostFile):                         # generic_perform_write's loop
        n = min(count & U64, 1 << 24)
        return P.run_long(task, None, lambda r: _write_iter(k, cpu, task, f, buf, n, r, off))
    data = copy_from_user(k, cpu, task, buf, min(count & U64, 1 << 24))   # charges the copy
    cpu.charge(k.cost.syscall_body)
    return f.pwrite(data, off)


def _vec(k: "Kernel", task, iov: int, iovcnt: int) -> list[tuple[int, int]] | int:
    if iovcnt < 0 or iovcnt > 1024:
        return -E.EINVAL
    raw = task.mm.read(iov, 16 * iovcnt)
    return [(int.from_bytes(raw[16 * i: 16 * i + 8], "little"),
             int.from_bytes(raw[16 * i + 8: 16 * i + 16], "little")) for i in range(iovcnt)]


def _each_iov(vec: list[tuple[int, int]], op: Any, res: Any = None) -> Any:
    """Run ``op(base, length)`` over the non-empty buffers in order, stopping at the first
    short transfer; an error (or a block) counts only when nothing was transferred yet.
    With a progress record ``res`` (kernel/preempt.py) a preempted buffer's index and the
    bytes before it are kept, and the call continues there when it is switched back in."""
    total = res.total if res is not None else 0
    for i, (base, length) in enumerate(vec):
        if not length or (res is not None and i < res.iov):
            continue
        if res is not None:
            res.iov, res.total = i, total
        r = op(base, length)
        if r is P.PREEMPTED:
            return r
        if not isinstance(r, int) or r < 0:
            return r if total == 0 else total
        total += r
        if res is not None:
            res.done = 0
        if r < length:
            break
    return total


def _each_iov_long(k: "Kernel", task, vec: list[tuple[int, int]], op: Any) -> Any:
    """_each_iov with one progress record for the whole readv/writev."""
    res = P.begin(task)
    r = _each_iov(vec, lambda base, n: op(base, n, res), res)
    if r is not P.PREEMPTED:
        P.finish(task)
    return r


def sys_writev(k: "Kernel", cpu, task, fd, iov, iovcnt, *a):
    vec = _vec(k, task, iov, iovcnt)
    if isinstance(vec, int):
        return vec
    f = task.files.get(fd if fd < 1 << 63 else fd - (1 << 64))
    if f is not None and f.writable:
        r = f.kernel_writev(k, cpu, task, vec)    # a plug-in kind's ->write_iter (File)
        if r is not None:
            return r
    return _each_iov_long(k, task, vec, lambda base, n, res: _do_write(k, cpu, task, fd, base, n, res))


def sys_readv(k: "Kernel", cpu, task, fd, iov, iovcnt, *a):
    vec = _vec(k, task, iov, iovcnt)
    if isinstance(vec, int):
        return vec
    f = task.files.get(fd if fd < 1 << 63 else fd - (1 << 64))
    if isinstance(f, VfsFile) and f.readable:
        # a file fills the buffers in order (do_iter_readv)
        return _each_iov_long(k, task, vec, lambda base, n, res: _do_read(k, cpu, task, fd, base, n, res))
    if f is not None and f.readable:
        r = f.kernel_readv(k, cpu, task, vec)     # a plug-in kind's ->read_iter (File)
        if r is not None:
            return r
    if isinstance(f, PipeEnd) and f.readable and f.pipe.buf:
        # pipe_read copies what the pipe holds into the whole iov_iter, buffer after buffer,
        # and sleeps only when it is empty at the start: read on while data is left (a
        # drained pipe ends the vector with a short count instead of blocking)
        p = f.pipe
        return _each_iov_long(k, task, vec, lambda base, n, res:
                                   _do_read(k, cpu, task, fd, base, n, res) if p.buf else 0)
    for base, length in vec:              # the first non-empty buffer (it may block)
        if length:
            return sys_read(k, cpu, task, fd, base, length)
    return 0


def sys_lseek(k: "Kernel", cpu, task, fd, offset, whence, *a):
    f = task.files.get(fd if fd < 1 << 63 else fd - (1 << 64))
    if f is None:
        return -E.EBADF
    whence &= 0xFFFFFFFF            # an unsigned int in Linux
    if whence > 4:
        return -E.EINVAL            # ksys_lseek: whence past SEEK_MAX, whatever the file
    if isinstance(f, VfsFile):
        return f.llseek(offset - (1 << 64) if offset >> 63 else offset, whence)
    if isinstance(f, SysctlFile):
        from emukern.kernel.sysctl import default_llseek
        pos = default_llseek(f.pos, 0, offset - (1 << 64) if offset >> 63 else offset, whence)
        if pos >= 0:
            f.pos = pos
        return pos
    if isinstance(f, StdinFile) and f.host_fd is not None:
        # emukern run's fd 0 is described as the --stdin file or the host's redirected file (a
        # regular file: seekable over the bytes read from it), /dev/null (null_lseek: always 0)
        # or the host's pipe (no_llseek, below)
        from emukern.kernel.sysctl import default_llseek
        from emukern.kernel.syscalls.stat import host_stdio_kind
        kind = host_stdio_kind(f.host_fd)
        if kind in ("null", "chr"):
            return 0
        if kind != "file":
            return -E.ESPIPE
        pos = default_llseek(f.pos, len(f.data), offset - (1 << 64) if offset >> 63 else offset, whence)
        if pos >= 0:
            f.pos = pos
        return pos
    return -E.ESPIPE                # pipes and terminals: no_llseek


def _pread_all(f: HostFile, n: int, off: int) -> bytes | int:
    parts = []
    while n > 0:
        got = f.pread(n, off)
        if isinstance(got, int):
            return got
        if not got:
            break
        parts.append(got)
        n -= len(got)
        off += len(got)
    return b"".join(parts)


def sys_preadv(k: "Kernel", cpu, task, fd, iov, iovcnt, pos_l, pos_h, *a):
    return syscalls_sys._prw(k, cpu, task, fd, iov, iovcnt, pos_l, 0, False, False)


def sys_pwritev(k: "Kernel", cpu, task, fd, iov, iovcnt, pos_l, pos_h, *a):
    return syscalls_sys._prw(k, cpu, task, fd, iov, iovcnt, pos_l, 0, True, False)


def sys_preadv2(k: "Kernel", cpu, task, fd, iov, iovcnt, pos_l, pos_h, flags, *a):
    return syscalls_sys._prw(k, cpu, task, fd, iov, iovcnt, pos_l, flags, False, True)


def sys_pwritev2(k: "Kernel", cpu, task, fd, iov, iovcnt, pos_l, pos_h, flags, *a):
    return syscalls_sys._prw(k, cpu, task, fd, iov, iovcnt, pos_l, flags, True, True)


def sys_sendfile(k: "Kernel", cpu, task, out_fd, in_fd, offp, count, *a):
    """do_sendfile: any writable out_fd (since 2.6.33).  Into a pipe it is splice_file_to_pipe
    (one wait for room, then at most that room; O_NONBLOCK on the pipe: EAGAIN), else
    do_splice_direct from a regular file into the sink's splice_write (a file, a terminal,
    /dev/null, a socket)."""
    cpu.charge(k.cost.syscall_body)
    inf, outf = task.files.get(_s32(in_fd)), task.files.get(_s32(out_fd))
    if inf is None or not inf.readable or outf is None or not outf.writable:
        return -E.EBADF
    opipe = syscalls_splice.get_pipe_info(outf)
    if opipe is not None:
        return _sendfile_to_pipe(k, cpu, task, inf, opipe, outf, offp, count)
    if not isinstance(inf, (HostFile, DevNull)) or getattr(inf, "node", None) is None or inf.node.is_dir:
        return -E.EINVAL                    # the input must be mmap-able (splice_read)
    if isinstance(outf, VfsFile) and outf.flags & 0o2000:
        return -E.EINVAL                    # O_APPEND output
    if not isinstance(outf, (OutputFile, VfsFile)) and not syscalls_splice._has_splice_write(outf):
        return -E.EINVAL                    # no splice_write
    if offp:
        if task.mm.find(offp) is None:
            return -E.EFAULT
        pos = _s64(int.from_bytes(task.mm.read(offp, 8), "little"))
        if pos < 0:
            return -E.EINVAL
    else:
        pos = inf.pos
    count = min(count & ((1 << 64) - 1), 0x7FFFF000)    # MAX_RW_COUNT
    if isinstance(outf, (OutputFile, VfsFile)):
        done = _copy_loop(lambda n, o: inf.pread(n, pos + o), lambda data, o: fs_meta._put(k, outf, data, None),
                          count)
    else:
        done = _sendfile_direct(k, cpu, task, inf, outf, pos, count)
    if not isinstance(done, int) or done < 0:
        return done
    if offp:
        task.mm.write(offp, (pos + done).to_bytes(8, "little"))
    else:
        inf.pos = pos + done
    cpu.charge(k.cost.syscall_body * (1 + done // 4096))
    return done


def _sendfile_direct(k: "Kernel", cpu, task, inf, outf, pos: int, count: int) -> Any:
    """splice_direct_to_actor into a sink with its own splice_write (a socket): 64 KiB at a
    time until ``count`` or the end of the file.  A blocking sink that fills up sleeps (BLOCK)
    and the call, run again when woken, goes on after the bytes already sent (kept on the task
    for this very call); a non-blocking one ends it with what it took."""
    key = (id(inf), id(outf), pos, count)
    prog = getattr(task, "sendfile_progress", None)
    done = prog[1] if prog is not None and prog[0] == key else 0
    task.sendfile_progress = None
    while done < count:
        data = inf.pread(min(count - done, 1 << 16), pos + done)
        if isinstance(data, int):
            return done or data
        if not data:
            break
        n = syscalls_splice.splice_write(k, cpu, task, outf, data, pos + done, False)
        if not isinstance(n, int):          # BLOCK: the sink is full and we sleep on it
            if done:
                task.sendfile_progress = (key, done)
            return n
        if n < 0:
            return done or n
        done += n
    return done


def _sendfile_to_pipe(k: "Kernel", cpu, task, inf, opipe, outf, offp, count) -> Any:
    """do_sendfile's pipe branch: FMODE_PREAD for an offset (ESPIPE), rw_verify_area's
    negative offset (EINVAL), then splice_file_to_pipe with the pipe's O_NONBLOCK."""
    if offp:
        if task.mm.find(offp) is None:
            return -E.EFAULT
        if not syscalls_splice.can_pread(inf):
            return -E.ESPIPE
        pos = _s64(int.from_bytes(task.mm.read(offp, 8), "little"))
    else:
        pos = getattr(inf, "pos", 0)
    if pos < 0:
        return -E.EINVAL
    count = min(count & ((1 << 64) - 1), 0x7FFFF000)    # MAX_RW_COUNT
    done = syscalls_splice.splice_file_to_pipe(k, cpu, task, inf, opipe, pos, count, outf.nonblock)
    if isinstance(done, int) and done > 0:
        if offp:
            task.mm.write(offp, (pos + done).to_bytes(8, "little"))
        elif syscalls_splice.can_pread(inf):
            inf.pos = pos + done
    return done


def sys_copy_file_range(k: "Kernel", cpu, task, fd_in, off_in, fd_out, off_out, length, flags, *a):
    cpu.charge(k.cost.syscall_body)
    if flags & 0xFFFFFFFF:
        return -E.EINVAL
    inf, outf = task.files.get(_s32(fd_in)), task.files.get(_s32(fd_out))
    if inf is None or not inf.readable or outf is None or not outf.writable:
        return -E.EBADF
    for f in (inf, outf):
        node = getattr(f, "node", None)
        if node is not None and node.is_dir:
            return -E.EISDIR
        if not isinstance(f, HostFile):
            return -E.EINVAL                # generic_file_rw_checks: regular files only
    if outf.flags & 0o2000:
        return -E.EBADF                     # O_APPEND
    offs = []
    for p, f in ((off_in, inf), (off_out, outf)):
        if p:
            if task.mm.find(p) is None:
                return -E.EFAULT
            v = _s64(int.from_bytes(task.mm.read(p, 8), "little"))
            if v < 0:
                return -E.EINVAL
            offs.append(v)
        else:
            offs.append(f.pos)
    pin, pout = offs
    length &= (1 << 64) - 1
    if pin + length > MAX_LFS or pout + length > MAX_LFS:
        return -EOVERFLOW
    if (fs_meta._meta_key(inf.node, inf) == fs_meta._meta_key(outf.node, outf)
            and pin < pout + length and pout < pin + length):
        return -E.EINVAL                    # overlapping ranges of one file
    length = min(length, 0x7FFFF000)
    done = _copy_loop(lambda n, o: inf.pread(n, pin + o), lambda data, o: outf.pwrite(data, pout + o), length)
    if done < 0:
        return done
    for p, f, base in ((off_in, inf, pin), (off_out, outf, pout)):
        if p:
            task.mm.write(p, (base + done).to_bytes(8, "little"))
        else:
            f.pos = base + done
    cpu.charge(k.cost.syscall_body * (1 + done // 4096))
    return done
