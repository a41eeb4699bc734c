"""Open files: stdio, pipes and /proc/sys entries, in per-process descriptor tables.

The first process's stdio (``StdinFile``, ``OutputFile``) either captures into a buffer (the
Python API, pytest) or, under ``emukern run``, stands for one of the host's own descriptors
(``host_fd``): then fstat/ioctl describe what the host's descriptor is (a pipe, a file, a
terminal, /dev/null) and output goes straight to it, a host error becoming the guest's errno.
"""
from __future__ import annotations

import os
import resource

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.machine.memory import OutOfMemory

if TYPE_CHECKING:
    from emukern.kernel.sysctl import SysctlEntry
    from emukern.kernel.task import Task

PIPE_BUF_SIZE = 65536


# ---- host descriptors (fs.file-max -> ENFILE) ----------------------------------------------------
# Every open regular file of the root, /dev/shm file and shared memfd holds a descriptor of
# emukern's own host process, and the host's RLIMIT_NOFILE is shared by every guest process of
# every machine in it.  Linux's answer to "the system holds too many files" is fs.file-max and
# ENFILE; emukern's file-max is the host's soft limit less a reserve kept for emukern itself
# (its engines, snapshots, the host's stdio, the test harness), and it is checked where the
# kernel takes a host descriptor.  The check needs no count: the host gives the lowest free
# number, so a new descriptor at or above the bound means the process already holds that many.
HOST_FD_RESERVE_MIN = 128               # descriptors always left to emukern itself ...
HOST_FD_RESERVE_SHARE = 8               # ... or an eighth of the host's limit, if more


def host_file_max() -> int:
    """The number of host descriptors the process may hold before guest opens get ENFILE."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY or soft > 1 << 20:
        soft = 1 << 20
    return max(32, soft - max(HOST_FD_RESERVE_MIN, soft // HOST_FD_RESERVE_SHARE))


def host_fd_admit(fd: int) -> bool:
    """alloc_empty_file's file-max check for a host descriptor the kernel just took: True to
    keep it, False (and it is closed) when the process holds ``host_file_max()`` already — the
    caller answers ENFILE.  Unlike Linux, root is not exempt: the host's limit is real."""
    if fd < host_file_max():
        return True
    os.close(fd)
    return False


class WaitQueue:
    """Tasks sleeping until someone calls wake_up (Linux ``wait_queue_head_t``)."""

    def __init__(self, name: str = "") -> None:
        self.name = name
        self.waiters: deque["Task"] = deque()
        self.wakes = 0                  # wake-ups so far, sleepers or not (epoll's EPOLLET edge)

    def add(self, task: "Task") -> None:
        if task not in self.waiters:
            self.waiters.append(task)

    def remove(self, task: "Task") -> None:
        try:
            self.waiters.remove(task)
        except ValueError:
            pass


class File:
    """An open file (``struct file``).  The kinds the kernel core knows (stdio, pipes, host files,
    sysctl entries, eventfd, epoll) are handled where each operation is; any other kind (a
    socket, a timerfd, ...) plugs in through the ``f_op``-like methods below, which the read/
    write/fstat/poll paths call when they are overridden (``None``: the operation is not
    provided, and the caller answers as Linux does for a file without it)."""
    kind = "file"
    readable = False
    writable = False
    # st_mode for fstat (S_IFSOCK | 0o777 for a socket, ...); None: the core's own rule
    stat_mode: int | None = None

    def __init__(self) -> None:
        self.refs = 0

    def on_close(self) -> list[WaitQueue]:
        """Called when the last descriptor goes; returns wait queues to wake."""
        return []

    # ---- the pluggable operations (file_operations) -----------------------------------------
    def kernel_read(self, k: Any, cpu: Any, task: "Task", buf: int, count: int) -> Any:
        """``->read_iter`` for a plug-in kind: bytes copied to ``buf``, -errno or BLOCK (after
        sleeping on a wait queue: the syscall is re-run when woken).  None: not a plug-in kind."""
        return None

    def kernel_write(self, k: Any, cpu: Any, task: "Task", buf: int, count: int) -> Any:
        """``->write_iter`` for a plug-in kind, as :meth:`kernel_read`."""
        return None

    def kernel_readv(self, k: Any, cpu: Any, task: "Task", vec: list[tuple[int, int]]) -> Any:
        """readv's ``->read_iter`` for a plug-in kind that must see the whole vector at once (a
        datagram socket: one message across the buffers); None: readv reads into the first
        non-empty buffer through :meth:`kernel_read` (a short read)."""
        return None

    def kernel_writev(self, k: Any, cpu: Any, task: "Task", vec: list[tuple[int, int]]) -> Any:
        """writev's ``->write_iter`` for a plug-in kind, as :meth:`kernel_readv`."""
        return None

    def splice_read(self, k: Any, cpu: Any, task: "Task", count: int, nonblock: bool) -> Any:
        """``->splice_read`` for a plug-in kind (a socket): up to ``count`` bytes taken from the
        file into the kernel (bytes, b"" at end of file), -errno, or BLOCK after sleeping.  None:
        the file has no splice_read (splice and sendfile answer EINVAL)."""
        return None

    def splice_write(self, k: Any, cpu: Any, task: "Task", data: bytes, nonblock: bool) -> Any:
        """``->splice_write`` for a plug-in kind: how many of the kernel's ``data`` it took (a
        short count when it filled up after taking some), -errno, or BLOCK after sleeping
        (nothing taken).  None: no splice_write (EINVAL)."""
        return None

    def poll(self) -> int | None:
        """``->poll``: the EPOLL* mask now, or None when the file cannot be polled."""
        return None

    def poll_queues(self) -> list[WaitQueue]:
        """The wait queues a change of :meth:`poll`'s mask is announced on."""
        return []


class StdinFile(File):
    kind = "stdin"
    readable = True
    # the host descriptor the guest's input is described by (emukern run: the --stdin file, the
    # host's own piped or redirected input, or /dev/null when there is none — a terminal is read
    # only when asked); None: a capture (the Python API), which fstat shows as a terminal
    host_fd: int | None = None

    def __init__(self, data: bytes) -> None:
        super().__init__()
        self.data = data
        self.pos = 0
        # a host descriptor whose bytes are still to come (emukern run with a pipe on its stdin):
        # read only as far as the guest asks, so a guest that never reads fd 0 never waits on it
        self.source: int | None = None
        # the source is a terminal: a read returns the first line typed, as a tty's does
        self.source_is_tty = False

    def take(self, count: int) -> bytes:
        """The next ``count`` bytes the guest reads (fewer only at end of input), advancing the
        position.  From a pipe, the host is read until ``count`` bytes or end of file are there,
        however the writer chunked them: the same input bytes give the same reads, so the run
        repeats (a pipe's reader under Linux may see shorter reads, as timing decides)."""
        if self.source is not None and len(self.data) - self.pos < count:
            self._pull(self.pos + count)
        out = self.data[self.pos: self.pos + count]
        self.pos += len(out)
        return out

    def _pull(self, upto: int) -> None:
        assert self.source is not None
        parts, have = [self.data], len(self.data)
        while have < upto:
            try:
                chunk = os.read(self.source, max(upto - have, 65536))
            except InterruptedError:
                continue
            except OSError:
                chunk = b""                      # a host read error ends the input
            if not chunk:
                self.source = None               # end of input: nothing more will come
                break
            parts.append(chunk)
            have += len(chunk)
            if self.source_is_tty:
                break
        self.data = b"".join(parts)


class OutputFile(File):
    kind = "stdout"
    writable = True

    def __init__(self, name: str, sink: bytearray, echo: object | None = None) -> None:
        super().__init__()
        self.kind = name
        self.sink = sink
        self.echo = echo        # a binary stream to mirror output to (the terminal), or None
        # emukern run: the host's own descriptor this output is (see the module docstring);
        # None: the output is captured into ``sink`` (and mirrored to ``echo``)
        self.host_fd: int | None = None

    def host_write(self, data: bytes) -> int:
        """Write to the host descriptor as write(2) would to the same file: all of ``data``
        (os.write may be short on a pipe), or -errno from the host (EPIPE for a reader that is
        gone, ENOSPC on /dev/full, ...) when nothing was written; a short count when an error
        comes after some bytes went out, as Linux's write returns what it wrote."""
        assert self.host_fd is not None
        done = 0
        view = memoryview(data)
        while done < len(data):
            try:
                n = os.write(self.host_fd, view[done:])
            except InterruptedError:
                continue
            except OSError as exc:
                if done:
                    break
                return -(exc.errno or 5)            # (EIO when the host names none)
            done += n
        self.sink += data[:done]
        return done


# pipe buffer sizes and limits (fs/pipe.c; the /proc/sys/fs knobs at their defaults)
PAGE_SIZE = 4096
PIPE_DEF_BUFFERS = 16               # a new pipe's slots: 16 pages, 64 KiB
PIPE_MIN_DEF_BUFFERS = 2            # what a user past pipe-user-pages-soft gets instead
PIPE_MAX_SIZE = 1 << 20             # fs.pipe-max-size: the most F_SETPIPE_SZ gives without privilege
PIPE_USER_PAGES_SOFT = 16384        # fs.pipe-user-pages-soft (pages one user's pipes may hold)
PIPE_USER_PAGES_HARD = 0            # fs.pipe-user-pages-hard (0: no hard limit)


class PipeUser:
    """The per-user pipe page count (user_struct->pipe_bufs) of one machine: account_pipe_buffers
    keeps it, and the soft and hard limits above are checked against it."""

    def __init__(self) -> None:
        self.bufs: dict[int, int] = {}

    def account(self, uid: int, old: int, new: int) -> int:
        """account_pipe_buffers: move ``uid``'s count from ``old`` slots to ``new``; the new total."""
        n = self.bufs.get(uid, 0) + new - old
        if n:
            self.bufs[uid] = n
        else:
            self.bufs.pop(uid, None)
        return n

    @staticmethod
    def too_many_soft(n: int) -> bool:
        return bool(PIPE_USER_PAGES_SOFT) and n > PIPE_USER_PAGES_SOFT

    @staticmethod
    def too_many_hard(n: int) -> bool:
        return bool(PIPE_USER_PAGES_HARD) and n > PIPE_USER_PAGES_HARD


@dataclass(eq=False)
class Pipe:
    ino: int = 0            # its pipefs inode number (get_next_ino), what fstat reports
    buf: bytearray = field(default_factory=bytearray)
    readers: int = 0
    writers: int = 0
    rwait: WaitQueue = field(default_factory=lambda: WaitQueue("pipe_read"))
    wwait: WaitQueue = field(default_factory=lambda: WaitQueue("pipe_write"))
    # pipe->mutex: held by a pipe_read/pipe_write in progress — across a preemption inside it
    # (kernel/preempt.py), so the other end waits for it (mutex_lock sleeps) meanwhile
    mutex_owner: Any = None
    lockwait: WaitQueue = field(default_factory=lambda: WaitQueue("pipe_lock"))
    # pipe->max_usage: how many page slots the ring may fill (F_SETPIPE_SZ changes it)
    max_usage: int = PIPE_DEF_BUFFERS
    # the machine's MemoryPool the queued pages are charged to (None: uncharged): Linux
    # allocates each pipe buffer page with __GFP_ACCOUNT, so a guest filling many pipes meets
    # its memory limit instead of growing the host's memory
    pool: Any = None
    charged: int = 0        # bytes charged to ``pool`` now: the queued bytes' whole pages
    # the per-user account (PipeUser), its uid, and pipe->nr_accounted (slots counted there)
    users: Any = None
    uid: int = 0
    nr_accounted: int = 0

    @property
    def size(self) -> int:
        """The pipe's capacity in bytes (F_GETPIPE_SZ)."""
        return self.max_usage * PAGE_SIZE

    def room(self) -> int:
        return self.size - len(self.buf)

    def charge_to(self, nbytes: int) -> bool:
        """Charge the pages that ``nbytes`` queued bytes fill; False (nothing changed) when the
        machine's memory limit refuses them — pipe_write's failed alloc_page."""
        want = -(-nbytes // PAGE_SIZE) * PAGE_SIZE
        if self.pool is None or want <= self.charged:
            return True
        try:
            self.pool.charge(want - self.charged, "pipe buffer")
        except OutOfMemory:
            return False
        self.charged = want
        return True

    def settle(self) -> None:
        """Give back the pages the queue no longer fills (after a read takes bytes out)."""
        have = -(-len(self.buf) // PAGE_SIZE) * PAGE_SIZE
        if self.pool is not None and have < self.charged:
            self.pool.uncharge(self.charged - have)
            self.charged = have

    def free(self) -> None:
        """free_pipe_info: the last end is gone; its bytes, pages and user account go too."""
        self.buf.clear()
        self.settle()
        if self.users is not None and self.nr_accounted:
            self.users.account(self.uid, self.nr_accounted, 0)
            self.nr_accounted = 0


O_NONBLOCK = 0o4000      # (asm-generic fcntl.h, the same on riscv64 and arm64)


class PipeEnd(File):
    def __init__(self, pipe: Pipe, write: bool, nonblock: bool = False) -> None:
        super().__init__()
        self.pipe = pipe
        # f_flags' O_NONBLOCK, per open file (each end has its own): pipe2(O_NONBLOCK) or
        # fcntl(F_SETFL); pipe_read/pipe_write answer EAGAIN instead of sleeping
        self.nonblock = nonblock
        self.write_end = write
        self.kind = "pipe-w" if write else "pipe-r"
        self.readable = not write
        self.writable = write
        if write:
            pipe.writers += 1
        else:
            pipe.readers += 1

    def setfl(self, flags: int) -> int:
        """fcntl(F_SETFL): O_NONBLOCK is the one status flag a pipe keeps (setfl)."""
        self.nonblock = bool(flags & O_NONBLOCK)
        return 0

    def on_close(self) -> list[WaitQueue]:
        p = self.pipe
        if self.write_end:
            p.writers -= 1
            wq = p.rwait                 # readers see EOF
        else:
            p.readers -= 1
            wq = p.wwait                 # writers see EPIPE
        if p.readers == 0 and p.writers == 0:
            p.free()                     # (a FIFO's O_RDWR end frees after its second count)
        return [wq]


class SysctlFile(File):
    kind = "sysctl"

    def __init__(self, entry: "SysctlEntry", readable: bool, writable: bool) -> None:
        super().__init__()
        self.entry = entry
        self.readable = readable
        self.writable = writable
        self.pos = 0


class FdTable:
    """A process's descriptor table (``files_struct``), shared by threads with CLONE_FILES."""

    MAX_FDS = 1024
    # Called as hook(file, table) for each descriptor a table closes (close, dup2 over it, exit,
    # close-on-exec), after its reference is dropped and before the last close's on_close:
    # filp_close -> locks_remove_posix.  Each returns wait queues to wake; fs/locks.py adds one.
    close_hooks: list[Any] = []

    # what one descriptor is charged to the machine's guest memory: Linux charges its fd
    # tables to the memory cgroup; emukern charges what a descriptor costs the host (a dict
    # slot and its share of the table), so a guest that raises RLIMIT_NOFILE and fills the
    # table in many processes meets --mem-limit instead of the host's memory
    FD_COST = 256

    def __init__(self, pool: Any = None) -> None:
        self.fds: dict[int, File] = {}
        self.cloexec: set[int] = set()      # close_on_exec bits (FD_CLOEXEC)
        # the lowest descriptor number the owner may not use: its RLIMIT_NOFILE soft limit
        # (kernel/resource.py keeps it in step), which alloc_fd and dup2 check
        self.nofile = self.MAX_FDS
        self.pool = pool                    # the machine's MemoryPool (None: uncharged)
        # files->next_fd: no descriptor below it is free, so a search starts there (with a
        # table of 10^5 descriptors a scan from 0 on every dup would be quadratic)
        self.next_fd = 0

    def charge_slot(self) -> bool:
        """Charge one more descriptor; False past the machine's memory limit (ENOMEM)."""
        if self.pool is not None:
            try:
                self.pool.charge(self.FD_COST, "descriptor table")
            except OutOfMemory:
                return False
        return True

    def install(self, f: File, lowest: int = 0, cloexec: bool = False) -> int:
        fd = max(lowest, self.next_fd)
        while fd in self.fds:
            fd += 1
        if fd >= self.nofile:
            return -E.EMFILE
        if not self.charge_slot():
            return -E.ENOMEM                # expand_files: the table's memory was refused
        if lowest <= self.next_fd:
            self.next_fd = fd + 1
        self.fds[fd] = f
        f.refs += 1
        if cloexec:
            self.cloexec.add(fd)
        return fd

    def get(self, fd: int) -> File | None:
        return self.fds.get(fd)

    def close(self, fd: int) -> tuple[int, list[WaitQueue]]:
        f = self.fds.pop(fd, None)
        if f is None:
            return -E.EBADF, []
        if self.pool is not None:
            self.pool.uncharge(self.FD_COST)
        if fd < self.next_fd:
            self.next_fd = fd
        self.cloexec.discard(fd)
        f.refs -= 1
        wqs = [wq for hook in self.close_hooks for wq in hook(f, self)] if self.close_hooks else []
        return 0, wqs + (f.on_close() if f.refs == 0 else [])

    def close_all(self) -> list[WaitQueue]:
        wq: list[WaitQueue] = []
        for fd in sorted(self.fds):
            wq += self.close(fd)[1]
        return wq

    def do_close_on_exec(self) -> list[WaitQueue]:
        """execve closes every descriptor marked FD_CLOEXEC (fs/file.c do_close_on_exec)."""
        wq: list[WaitQueue] = []
        for fd in sorted(self.cloexec):
            wq += self.close(fd)[1]
        return wq

    def dup_table(self) -> "FdTable":
        """dup_fd: a copy for a child; OutOfMemory when its descriptors do not fit the limit."""
        t = FdTable(self.pool)
        if self.pool is not None:
            self.pool.charge(len(self.fds) * self.FD_COST, "descriptor table copy")
        for fd, f in self.fds.items():
            t.fds[fd] = f
            f.refs += 1      # pipe reader/writer counts are per File, dropped at the last close
        t.cloexec = set(self.cloexec)
        t.nofile = self.nofile
        t.next_fd = self.next_fd
        return t
