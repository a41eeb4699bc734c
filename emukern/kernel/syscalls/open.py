"""openat, openat2 / close and the attribute-changing calls <-> fs/open.c.

``sys_openat`` goes through kernel/fs/namei.py's ``do_sys_openat``; the module also holds
truncate/ftruncate, fallocate, faccessat(2), chdir/fchdir, fchmod(at/at2) and fchown(at), the
metadata ones (mode, owner) kept in kernel/fs/meta.py's per-node table, not on the host file.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.files import PipeEnd
from emukern.kernel.fs import EROFS
from emukern.kernel.fs import meta as fs_meta
from emukern.kernel.fs import namei as fs_namei
from emukern.kernel.fs.file import MAX_IO, HostFile, file_size_changed
from emukern.kernel.fs.meta import (
    EFBIG,
    ENODEV,
    EOPNOTSUPP,
    ESPIPE,
    FALLOC_FL_KEEP_SIZE,
    FALLOC_FL_PUNCH_HOLE,
    FALLOC_SUPPORTED,
    MAX_LFS,
    _s64,
)
from emukern.kernel.fs.vfs import S_IFREG
from emukern.kernel.fs.uapi import (
    AT_EACCESS,
    AT_EMPTY_PATH,
    AT_FDCWD,
    AT_SYMLINK_NOFOLLOW,
    W_OK,
    X_OK,
    _s32,
)
from emukern.kernel.sysret import s64
from emukern.kernel.syscalls import inotify as syscalls_inotify
from emukern.kernel.syscalls import memfd as syscalls_memfd

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_openat(k: "Kernel", cpu, task, dirfd, path_ptr, flags, mode, *a):
    fd = fs_namei.do_sys_openat(k, cpu, task, dirfd, path_ptr, flags, mode)   # kernel/fs/namei.py
    syscalls_inotify.fsnotify_create_open(k, cpu, task, fd)                  # IN_CREATE of O_CREAT
    return fd


def sys_openat2(k: "Kernel", cpu, task, dirfd, path_ptr, how_ptr, usize, *a):
    fd = fs_namei.do_sys_openat2(k, cpu, task, dirfd, path_ptr, how_ptr, usize)  # kernel/fs/namei.py
    syscalls_inotify.fsnotify_create_open(k, cpu, task, fd)
    return fd


def sys_close(k: "Kernel", cpu, task, fd, *a):
    f = task.files.get(s64(fd))
    ret, wqs = task.files.close(s64(fd))
    syscalls_inotify.fsnotify_close(k, cpu, f)          # IN_CLOSE_WRITE/NOWRITE at the last close
    for wq in wqs:
        k.sched.wake_queue(wq, cpu.now)
    return ret


def sys_ftruncate(k: "Kernel", cpu, task, fd, length, *a):
    f = task.files.get(_s32(fd))
    if f is None:
        return -E.EBADF
    if not isinstance(f, HostFile) or not f.writable:
        return -E.EINVAL
    r = f.truncate(length)
    if r == 0:
        fs_meta.file_update_time(k, cpu, f.node, f)
    return r


def sys_chdir(k: "Kernel", cpu, task, path_ptr, *a):
    return fs_namei._set_cwd(k, task, fs_namei._lookup_at(k, task, AT_FDCWD, path_ptr))


def sys_fchdir(k: "Kernel", cpu, task, fd, *a):
    return fs_namei._set_cwd(k, task, fs_namei._fd_node(k, task, fd))


# ---- access ----------------------------------------------------------------------------------
def sys_faccessat2(k: "Kernel", cpu, task, dirfd, path_ptr, mode, flags, *a):
    if mode & ~7 or flags & ~(AT_EACCESS | AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH):
        return -E.EINVAL
    node = fs_namei._lookup_at(k, task, dirfd, path_ptr, follow=not flags & AT_SYMLINK_NOFOLLOW,
                           empty_ok=bool(flags & AT_EMPTY_PATH))
    if isinstance(node, int):
        return node
    # the caller is root (uid 0): only W on a read-only mount and X without any x bit fail
    if mode & W_OK and node.host is not None and not k.vfs.writable:
        return -EROFS
    if mode & W_OK and node.host is None and not node.mode & 0o222:
        return -E.EACCES
    if mode & X_OK and not node.is_dir and not node.mode & 0o111:
        return -E.EACCES
    return 0


def sys_faccessat(k: "Kernel", cpu, task, dirfd, path_ptr, mode, *a):
    return sys_faccessat2(k, cpu, task, dirfd, path_ptr, mode, 0)


def sys_fchmod(k: "Kernel", cpu, task, fd, mode, *a):
    f = task.files.get(_s32(fd))
    if f is None:
        return -E.EBADF
    node = getattr(f, "node", None)
    if node is None:
        return -E.EBADF if not isinstance(f, PipeEnd) else 0
    r = syscalls_memfd.memfd_setattr_mode(k, f, mode)
    if r:
        return r
    return fs_meta._chmod(k, cpu, task, node, mode)


def sys_fchmodat(k: "Kernel", cpu, task, dirfd, path_ptr, mode, *a):
    node = fs_meta._node_at(k, task, dirfd, path_ptr, 0)
    return node if isinstance(node, int) else fs_meta._chmod(k, cpu, task, node, mode)


def sys_fchmodat2(k: "Kernel", cpu, task, dirfd, path_ptr, mode, flags, *a):
    """do_fchmodat (Linux 6.6): AT_SYMLINK_NOFOLLOW on a symlink is EOPNOTSUPP (a link has
    no mode of its own to change)."""
    flags &= 0xFFFFFFFF
    if flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH):
        return -E.EINVAL
    node = fs_meta._node_at(k, task, dirfd, path_ptr, flags)
    if isinstance(node, int):
        return node
    if node.is_link:
        return -EOPNOTSUPP
    return fs_meta._chmod(k, cpu, task, node, mode)


def sys_fchown(k: "Kernel", cpu, task, fd, uid, gid, *a):
    f = task.files.get(_s32(fd))
    if f is None:
        return -E.EBADF
    node = getattr(f, "node", None)
    if node is None:
        return -E.EBADF
    return fs_meta._chown(k, cpu, task, node, uid, gid)


def sys_fchownat(k: "Kernel", cpu, task, dirfd, path_ptr, uid, gid, flags, *a):
    flags &= 0xFFFFFFFF
    if flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH):
        return -E.EINVAL
    node = fs_meta._node_at(k, task, dirfd, path_ptr, flags)
    return node if isinstance(node, int) else fs_meta._chown(k, cpu, task, node, uid, gid)


# ---- truncate / fallocate (fs/open.c do_sys_truncate, vfs_fallocate) --------------------------
def sys_truncate(k: "Kernel", cpu, task, path_ptr, length, *a):
    cpu.charge(k.cost.syscall_body)
    length = _s64(length)
    if length < 0:
        return -E.EINVAL
    node = fs_meta._node_at(k, task, AT_FDCWD, path_ptr, 0)
    if isinstance(node, int):
        return node
    if node.is_dir:
        return -E.EISDIR
    if node.kind != S_IFREG:
        return -E.EINVAL
    if node.host is None:
        return -E.EACCES if node.opener is None else 0
    if not k.vfs.writable:
        return -EROFS
    try:
        fd = node.host.open(os.O_WRONLY | os.O_NONBLOCK)    # (openat of the held parent, O_NOFOLLOW)
        try:
            os.ftruncate(fd, length)
            file_size_changed(fd)          # its shared mappings follow the new size
        finally:
            os.close(fd)
    except OSError as e:
        return -(e.errno or E.EIO)
    fs_meta.file_update_time(k, cpu, node)
    return 0


def sys_fallocate(k: "Kernel", cpu, task, fd, mode, offset, length, *a):
    cpu.charge(k.cost.syscall_body)
    mode &= 0xFFFFFFFF
    offset, length = _s64(offset), _s64(length)
    f = task.files.get(_s32(fd))
    if f is None:
        return -E.EBADF
    if offset < 0 or length <= 0:
        return -E.EINVAL
    if mode & ~FALLOC_SUPPORTED:
        return -EOPNOTSUPP
    if mode & FALLOC_FL_PUNCH_HOLE and not mode & FALLOC_FL_KEEP_SIZE:
        return -EOPNOTSUPP                  # vfs_fallocate: a hole must keep the size
    if not f.writable:
        return -E.EBADF
    if isinstance(f, PipeEnd):
        return -ESPIPE
    node = getattr(f, "node", None)
    if node is not None and node.is_dir:
        return -E.EISDIR
    if not isinstance(f, HostFile):
        return -ENODEV
    if offset + length > MAX_LFS:
        return -EFBIG
    if getattr(f, "fallocate_unsupported", False):
        return -EOPNOTSUPP                  # a file with no fallocate operation (secretmem)
    size = f.size()
    if mode == 0:
        return f.truncate(offset + length) if offset + length > size else 0
    if mode == FALLOC_FL_KEEP_SIZE:
        return 0                            # blocks reserved beyond EOF: nothing visible
    if mode == FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE:
        end = min(offset + length, size)    # the hole reads as zeros; the size stays
        pos = offset
        while pos < end:
            n = min(end - pos, MAX_IO)
            r = f.pwrite(bytes(n), pos)
            if r < 0:
                return r
            pos += n
        return 0
    return -EOPNOTSUPP                      # collapse/zero/insert range, unshare: not modelled
