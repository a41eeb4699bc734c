"""fstat / newfstatat / statx / readlinkat <-> fs/stat.c.

``_stat_at`` is vfs_fstatat over a path or (AT_EMPTY_PATH) a descriptor, and ``_fstat_file``
gives pipes, stdio, sysctl and host files their 'struct stat' (stdio that is the host's own
descriptor under ``emukern run``: what that descriptor is, ``_host_stdio_stat``).  ``sys_readlinkat`` reads
symlinks, with /proc/self/exe the guest path of the running image.
"""
from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.kernel.files import OutputFile, PipeEnd, StdinFile, SysctlFile
from emukern.kernel.fs import meta as fs_meta
from emukern.kernel.fs import namei as fs_namei
from emukern.kernel.fs.file import HostFile, VfsFile, stat_bytes, stat_fields, stat_with_times, statx_bytes
from emukern.kernel.fs.vfs import cwd_of
from emukern.kernel.fs.uapi import (
    AT_EMPTY_PATH,
    AT_FDCWD,
    AT_SYMLINK_NOFOLLOW,
    S_IFCHR,
    S_IFIFO,
    S_IFREG,
    _s32,
    _stat_bytes,
)

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


PTS0_RDEV = 136 << 8                    # /dev/pts/0 (new_encode_dev(136, 0))
STDIO_INO = 3                           # fixed: the host's inode numbers vary from run to run


def _encode_dev(major: int, minor: int) -> int:
    """new_encode_dev: the st_rdev a 64-bit Linux reports for major:minor."""
    return (minor & 0xFF) | (major << 8) | ((minor & ~0xFF) << 12)


def host_stdio_kind(fd: int) -> str:
    """What the host descriptor ``fd`` is, as the guest sees it: "fifo", "file", "tty",
    "null", "chr" (another character device), "sock" or "other"."""
    try:
        st = os.fstat(fd)
    except OSError:
        return "other"
    if stat.S_ISFIFO(st.st_mode):
        return "fifo"
    if stat.S_ISREG(st.st_mode):
        return "file"
    if stat.S_ISSOCK(st.st_mode):
        return "sock"
    if stat.S_ISCHR(st.st_mode):
        if os.isatty(fd):
            return "tty"
        if (os.major(st.st_rdev), os.minor(st.st_rdev)) == (1, 3):
            return "null"
        return "chr"
    return "other"


def _host_stdio_stat(fd: int) -> bytes:
    """fstat of a stdio descriptor that is the host's own (emukern run): its type, permission
    bits, size (a regular file) and device number (a device) as the host has them, with fixed
    inode, device and times, so the same host set-up gives the same bytes every run.  A
    terminal is /dev/pts/0 whatever the host's pty is (with devpts' st_blksize, 1024)."""
    try:
        st = os.fstat(fd)
    except OSError:
        return _stat_bytes(S_IFCHR | 0o620, rdev=PTS0_RDEV, ino=STDIO_INO)
    kind = host_stdio_kind(fd)
    perm = st.st_mode & 0o7777
    if kind == "fifo":
        return _stat_bytes(S_IFIFO | perm, ino=STDIO_INO)
    if kind == "file":
        return _stat_bytes(S_IFREG | perm, size=st.st_size, ino=STDIO_INO)
    if kind == "tty":
        # a pty's number depends on the session: always /dev/pts/0; devpts' 1 KiB st_blksize
        st_ = bytearray(_stat_bytes(S_IFCHR | perm, rdev=PTS0_RDEV, ino=STDIO_INO))
        st_[56:60] = (1024).to_bytes(4, "little")
        return bytes(st_)
    if kind in ("null", "chr"):
        return _stat_bytes(S_IFCHR | perm, rdev=_encode_dev(os.major(st.st_rdev), os.minor(st.st_rdev)),
                           ino=STDIO_INO)
    return _stat_bytes(stat.S_IFMT(st.st_mode) | perm, ino=STDIO_INO)


def _fstat_file(k: "Kernel", f: Any) -> bytes:
    if isinstance(f, VfsFile):
        return _fstat_object(k, f)
    # a pipe, a socket, a terminal: no file system keeps its times, it reports the boot time
    return stat_with_times(_fstat_object(k, f), fs_meta.synthetic_times(k))


def _fstat_object(k: "Kernel", f: Any) -> bytes:
    if isinstance(f, VfsFile):
        return stat_bytes(fs_meta.apply_meta(k, stat_fields(f.node, f.size() if isinstance(f, HostFile) else None),
                                          f.node, f))
    if isinstance(f, (OutputFile, StdinFile)):
        if f.host_fd is not None:
            return _host_stdio_stat(f.host_fd)
        # a capture buffer (the Python API, pytest) looks like a terminal, as it always did:
        # recorded figures of programs that fstat their stdio stay as they were
        return _stat_bytes(S_IFCHR | 0o620, rdev=PTS0_RDEV)
    if isinstance(f, PipeEnd):
        return _stat_bytes(S_IFIFO | 0o600, ino=f.pipe.ino)
    if isinstance(f, SysctlFile):
        return _stat_bytes(S_IFREG | f.entry.mode)
    if f.stat_mode is not None:            # a plug-in kind (File.stat_mode): a socket, ...
        return _stat_bytes(f.stat_mode, ino=getattr(f, "ino", 1) or 1)
    return _stat_bytes(S_IFREG | 0o644)


def sys_fstat(k: "Kernel", cpu, task, fd, statbuf, *a):
    f = task.files.get(fd if fd < 1 << 63 else fd - (1 << 64))
    if f is None:
        return -E.EBADF
    task.mm.write(statbuf, _fstat_file(k, f))
    cpu.charge(k.cost.syscall_body)
    return 0


def _stat_at(k: "Kernel", task, dirfd, path_ptr, flags) -> bytes | int:
    """vfs_fstatat: the 'struct stat' fields of a path, an fd (AT_EMPTY_PATH) or -errno."""
    if flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | 0x800 | 0x6000):   # NO_AUTOMOUNT, SYNC
        return -E.EINVAL
    path = fs_namei._user_path(k, task, path_ptr) if path_ptr else ""
    if isinstance(path, int):
        return path
    if path == "" and flags & AT_EMPTY_PATH:
        if _s32(dirfd) == AT_FDCWD:
            node = cwd_of(task, k.vfs)
        else:
            f = task.files.get(_s32(dirfd))
            if f is None:
                return -E.EBADF
            return _fstat_file(k, f)
    else:
        node = fs_namei.path_lookup(k, task, dirfd, path, follow=not flags & AT_SYMLINK_NOFOLLOW)
    if isinstance(node, int):
        return node
    if node.is_link:
        try:
            size = len(node.link_target().encode("utf-8", "surrogateescape"))
        except OSError:
            size = 0
        return stat_bytes(fs_meta.apply_meta(k, stat_fields(node, size), node))
    return stat_bytes(fs_meta.apply_meta(k, stat_fields(node), node))


def sys_newfstatat(k: "Kernel", cpu, task, dirfd, path_ptr, statbuf, flags, *a):
    st = _stat_at(k, task, dirfd, path_ptr, flags)
    if isinstance(st, int):
        return st
    task.mm.write(statbuf, st)
    cpu.charge(k.cost.syscall_body)
    return 0


def sys_statx(k: "Kernel", cpu, task, dirfd, path_ptr, flags, mask, buf, *a):
    st = _stat_at(k, task, dirfd, path_ptr, flags & ~0x6000)
    if isinstance(st, int):
        return st
    import struct
    (dev, ino, mode, nlink, uid, gid, rdev, _p, size, blksize) = struct.unpack_from("<QQIIIIQQqi", st)
    at, atn, mt, mtn, ct, ctn = struct.unpack_from("<qQqQqQ", st, 72)
    task.mm.write(buf, statx_bytes({"dev": dev, "ino": ino, "mode": mode, "nlink": nlink, "uid": uid,
                                    "gid": gid, "rdev": rdev, "size": size, "blksize": blksize,
                                    "atime": (at, atn), "mtime": (mt, mtn), "ctime": (ct, ctn)}))
    cpu.charge(k.cost.syscall_body)
    return 0


def sys_readlinkat(k: "Kernel", cpu, task, dirfd, path_ptr, buf, size, *a):
    """do_readlinkat: the target of a symlink (``/proc/self/exe`` is the guest path of the
    running image, updated by execve), truncated to ``size`` bytes without a NUL."""
    if _s32(size) <= 0:
        return -E.EINVAL
    node = fs_namei._lookup_at(k, task, dirfd, path_ptr, follow=False, empty_ok=True)
    if isinstance(node, int):
        return node
    if not node.is_link:
        return -E.EINVAL
    try:
        target = node.link_target().encode("utf-8", "surrogateescape")[: size & 0xFFFFFFFF]
    except OSError:
        return -E.ENOENT
    task.mm.write(buf, target)
    cpu.charge(k.cost.syscall_body)
    return len(target)
