"""fcntl <-> fs/fcntl.c.

``sys_fcntl`` handles F_DUPFD(_CLOEXEC) (through file.py's ``_dup``), F_GETFD/F_SETFD on the
descriptor table's close-on-exec set, and F_GETFL/F_SETFL; F_SETFL reaches only file kinds that
keep status flags (a socket's O_NONBLOCK).  The record-lock commands F_GETLK/F_SETLK/F_SETLKW
and their OFD forms (fcntl_getlk, fcntl_setlk) turn the guest's ``struct flock`` into a byte
range and hand it to ``fs/locks.py``; F_SETPIPE_SZ/F_GETPIPE_SZ go to pipe.py's ``pipe_fcntl``, F_ADD_SEALS/F_GET_SEALS
to memfd.py's ``memfd_fcntl``; F_CREATED_QUERY answers whether this open created the file.
Any other command is EINVAL.
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from emukern.errors import MemoryFault
from emukern.kernel import errno as E
from emukern.kernel.fs import locks as fs_locks
from emukern.kernel.fs.locks import F_RDLCK, F_UNLCK, F_WRLCK, OFFSET_MAX, SEEK_CUR, SEEK_END, SEEK_SET
from emukern.kernel.sysret import BLOCK
from emukern.kernel.fs.file import VfsFile
from emukern.kernel.syscalls import dnotify as syscalls_dnotify
from emukern.kernel.syscalls import file as syscalls_file
from emukern.kernel.syscalls import memfd as syscalls_memfd
from emukern.kernel.syscalls import pipe as syscalls_pipe
from emukern.kernel.fs.uapi import (
    F_DUPFD,
    F_DUPFD_CLOEXEC,
    F_GETFD,
    F_GETFL,
    F_SETFD,
    F_SETFL,
    FD_CLOEXEC,
    O_CLOEXEC,
    O_CREAT,
    O_EXCL,
    O_TRUNC,
    _s32,
)

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

# the record-lock commands (the 64-bit numbers: F_GETLK64 and F_GETLK are one on LP64)
F_GETLK, F_SETLK, F_SETLKW = 5, 6, 7
F_SETSIG, F_GETSIG = 10, 11
F_NOTIFY = 1026                          # F_LINUX_SPECIFIC_BASE + 2
F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW = 36, 37, 38
LOCK_CMDS = (F_GETLK, F_SETLK, F_SETLKW, F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW)
# Linux 6.12: did the open that made this file description create the file (FMODE_CREATED)?
F_CREATED_QUERY = 1028                  # (F_LINUX_SPECIFIC_BASE + 4)
# struct flock on arm64 and riscv64: short l_type, short l_whence, (pad) off_t l_start,
# off_t l_len, pid_t l_pid, (pad): 32 bytes
FLOCK_SIZE = 32
EOVERFLOW = 75


def _flock_to_range(f, l_whence: int, l_start: int, l_len: int) -> tuple[int, int] | int:
    """flock64_to_posix_lock: the byte range [start, end] the struct names, or -errno.  A length
    of 0 runs to the end of the file however it grows; a negative one ends just before l_start."""
    if l_whence == SEEK_SET:
        base = 0
    elif l_whence == SEEK_CUR:
        base = getattr(f, "pos", 0)
    elif l_whence == SEEK_END:
        size = getattr(f, "size", None)
        base = size() if size is not None else 0
    else:
        return -E.EINVAL
    if l_start > OFFSET_MAX - base:
        return -EOVERFLOW
    start = base + l_start
    if start < 0:
        return -E.EINVAL
    if l_len > 0:
        if l_len - 1 > OFFSET_MAX - start:
            return -EOVERFLOW
        return start, start + l_len - 1
    if l_len < 0:
        if start + l_len < 0:
            return -E.EINVAL
        return start + l_len, start - 1
    return start, OFFSET_MAX


def _fcntl_lock(k: "Kernel", cpu, task, f, cmd: int, arg: int):
    """fcntl_getlk / fcntl_setlk."""
    cpu.charge(k.cost.syscall_body)
    try:
        raw = task.mm.read(arg, FLOCK_SIZE)
    except MemoryFault:
        return -E.EFAULT
    l_type, l_whence = struct.unpack_from("<hh", raw, 0)
    l_start, l_len, l_pid = struct.unpack_from("<qqi", raw, 8)
    ofd = cmd in (F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW)
    owner = f if ofd else task.files
    if cmd in (F_GETLK, F_OFD_GETLK):
        # fcntl_getlk: the plain form refuses a type other than F_RDLCK/F_WRLCK before anything
        # else; the OFD form leaves the type to flock_to_posix_lock, which checks the range
        # first (EINVAL/EOVERFLOW) and then the type (F_UNLCK allowed: it reports the
        # description's own lock, Linux 6.3+)
        if not ofd and l_type not in (F_RDLCK, F_WRLCK):
            return -E.EINVAL
        rng = _flock_to_range(f, l_whence, l_start, l_len)
        if isinstance(rng, int):
            return rng
        if l_type not in (F_RDLCK, F_WRLCK, F_UNLCK):
            return -E.EINVAL
        if ofd and l_pid != 0:
            return -E.EINVAL
        held = fs_locks.posix_test_lock(k, f, owner, rng[0], rng[1], l_type)
        if held is None:
            out = struct.pack("<h", F_UNLCK) + raw[2:]
        else:
            length = 0 if held.end == OFFSET_MAX else held.end - held.start + 1
            out = struct.pack("<hhxxxxqqi", held.type, SEEK_SET, held.start, length,
                              -1 if held.ofd else held.pid) + raw[28:]
        try:
            task.mm.write(arg, out)
        except MemoryFault:
            return -E.EFAULT
        return 0
    rng = _flock_to_range(f, l_whence, l_start, l_len)
    if isinstance(rng, int):
        return rng
    if l_type not in (F_RDLCK, F_WRLCK, F_UNLCK):
        return -E.EINVAL
    # check_fmode_for_setlk: a read lock needs a readable description, a write lock a writable one
    if (l_type == F_RDLCK and not f.readable) or (l_type == F_WRLCK and not f.writable):
        return -E.EBADF
    if ofd and l_pid != 0:
        return -E.EINVAL
    wait = cmd in (F_SETLKW, F_OFD_SETLKW)
    ret = fs_locks.posix_lock_file(k, cpu, task, f, owner, ofd, rng[0], rng[1], l_type, wait)
    if ret is None:
        k.sched.sleep_on(cpu, task, fs_locks.lock_wait_queue(k, f), "posix_lock")
        return BLOCK
    return ret


def sys_fcntl(k: "Kernel", cpu, task, fd, cmd, arg, *a):
    f = task.files.get(fd if fd < 1 << 63 else fd - (1 << 64))
    if f is None:
        return -E.EBADF
    fd = _s32(fd)
    if cmd in (F_DUPFD, F_DUPFD_CLOEXEC):
        if arg >= task.files.nofile:
            return -E.EINVAL            # f_dupfd: no descriptor at or above the limit to give
        nfd = syscalls_file._dup(k, task, fd, None, lowest=arg)
        if nfd >= 0 and cmd == F_DUPFD_CLOEXEC:
            task.files.cloexec.add(nfd)
        return nfd
    if cmd == F_GETFD:
        return FD_CLOEXEC if fd in task.files.cloexec else 0
    if cmd == F_SETFD:
        if arg & FD_CLOEXEC:
            task.files.cloexec.add(fd)
        else:
            task.files.cloexec.discard(fd)
        return 0
    if cmd == F_SETFL:
        setfl = getattr(f, "setfl", None)      # a plug-in kind keeping O_NONBLOCK (a socket)
        return setfl(arg) if setfl is not None else 0
    if cmd == F_GETFL:
        if isinstance(f, VfsFile):
            return f.flags & ~(O_CREAT | O_EXCL | O_TRUNC | O_CLOEXEC)
        nb = 0o4000 if getattr(f, "nonblock", False) is True else 0     # a socket's O_NONBLOCK
        return (2 if f.readable and f.writable else (1 if f.writable else 0)) | nb
    if cmd in LOCK_CMDS:
        return _fcntl_lock(k, cpu, task, f, cmd, arg)
    if cmd == F_CREATED_QUERY:
        # each open walks to a fresh Node, and only an O_CREAT that made the name marks it, so
        # the flag belongs to this open file description as FMODE_CREATED does
        node = getattr(f, "node", None)
        return 1 if node is not None and node.created else 0
    if cmd in (syscalls_pipe.F_SETPIPE_SZ, syscalls_pipe.F_GETPIPE_SZ):
        return syscalls_pipe.pipe_fcntl(k, cpu, task, f, cmd, arg)
    if cmd in (syscalls_memfd.F_ADD_SEALS, syscalls_memfd.F_GET_SEALS):
        return syscalls_memfd.memfd_fcntl(k, cpu, task, f, cmd, arg)
    if cmd == F_NOTIFY:
        cpu.charge(k.cost.syscall_body)
        return syscalls_dnotify.fcntl_dirnotify(k, cpu, task, fd, f, arg)
    if cmd == F_SETSIG:
        return syscalls_dnotify.fcntl_setsig(f, _s32(arg))
    if cmd == F_GETSIG:
        return getattr(f, "fown_signum", 0)
    return -E.EINVAL
