"""mkdirat, unlinkat, renameat(2), linkat, symlinkat, mknodat <-> fs/namei.c's syscalls.

Names are resolved with kernel/fs/namei.py's walk inside the guest's root, a host directory
tree the changes are made in (EROFS when the root is not writable).  ``sys_renameat2`` supports
RENAME_NOREPLACE, RENAME_EXCHANGE and RENAME_WHITEOUT through the host's renameat2; symlink
targets are stored as given and only resolved by the guest's walk; ``sys_mknodat`` makes
regular files and FIFOs (the root behaves as a nodev mount, so device nodes and sockets are
EPERM; a FIFO is a host FIFO node that emukern never opens: fs/fifo.py).
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.fs import EROFS, EXDEV
from emukern.kernel.fs import meta as fs_meta
from emukern.kernel.fs import namei as fs_namei
from emukern.kernel.fs.vfs import S_IFIFO, S_IFMT, S_IFREG, _join, fs_of
from emukern.kernel.syscalls import inotify as syscalls_inotify
from emukern.kernel.fs.uapi import (
    AT_EMPTY_PATH,
    AT_REMOVEDIR,
    AT_SYMLINK_FOLLOW,
    RENAME_EXCHANGE,
    RENAME_NOREPLACE,
    RENAME_WHITEOUT,
    host_renameat2,
)

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_mkdirat(k: "Kernel", cpu, task, dirfd, path_ptr, mode, *a):
    path = fs_namei._user_path(k, task, path_ptr)
    if isinstance(path, int):
        return path
    if not isinstance(fs_namei.path_lookup(k, task, dirfd, path, follow=False), int):
        return -E.EEXIST
    pn = fs_namei.lookup_parent(k, task, dirfd, path)
    if isinstance(pn, int):
        return pn
    parent, name = pn
    hdir = fs_namei.new_name_dir(k, parent)
    if isinstance(hdir, int):
        return hdir
    try:
        os.mkdir(name, mode & 0o7777 & ~fs_of(task).umask, dir_fd=hdir.fd)
    except OSError as e:
        return -(e.errno or E.EACCES)
    fs_meta.name_update_time(k, cpu, parent, name)
    syscalls_inotify.fsnotify(k, cpu, syscalls_inotify.child_ref(k, parent, name), syscalls_inotify.IN_CREATE, isdir=True)
    return 0


def sys_unlinkat(k: "Kernel", cpu, task, dirfd, path_ptr, flags, *a):
    node = fs_namei._lookup_at(k, task, dirfd, path_ptr, follow=False)
    if isinstance(node, int):
        return node
    shm = node.extra.get("shm_inode")
    if shm is not None:                     # shm_unlink: a /dev/shm file (fs/shmfs.py)
        if flags & AT_REMOVEDIR:
            return -E.ENOTDIR
        return k.procfs.shm.unlink(shm.name)
    if node.host is None or not k.vfs.writable or node.path == "/":
        return -EROFS if node.host is not None or not k.vfs.writable else -E.EACCES
    try:
        if flags & AT_REMOVEDIR:
            if not node.is_dir:
                return -E.ENOTDIR
            if "mount" in node.extra:
                return -E.EBUSY             # a mountpoint (the walk gave the mount's root)
            os.rmdir(node.host.name, dir_fd=node.host.dir.fd)
        else:
            if node.is_dir:
                return -E.EISDIR
            if fs_meta.meta_of(k, node) is not None:
                fs_meta.file_update_time(k, cpu, node)   # its ctime, if another link keeps it
            os.unlink(node.host.name, dir_fd=node.host.dir.fd)
    except OSError as e:
        return -(e.errno or E.EACCES)
    syscalls_inotify.fsnotify(k, cpu, node.host, syscalls_inotify.IN_DELETE, isdir=bool(flags & AT_REMOVEDIR))
    parent = k.vfs.walk(os.path.dirname(node.path) or "/", k.vfs.root_node(node.ns))
    if not isinstance(parent, int):
        fs_meta.name_update_time(k, cpu, parent, "", created=False)
    return 0


def sys_renameat(k: "Kernel", cpu, task, olddirfd, oldpath, newdirfd, newpath, *a):
    if not k.arch.WANT_RENAMEAT:
        return -E.ENOSYS            # __ARCH_WANT_RENAMEAT: riscv64's table has renameat2 only
    return sys_renameat2(k, cpu, task, olddirfd, oldpath, newdirfd, newpath, 0)


def sys_renameat2(k: "Kernel", cpu, task, olddirfd, oldpath, newdirfd, newpath, flags, *a):
    """do_renameat2: RENAME_NOREPLACE and RENAME_EXCHANGE (not together), RENAME_WHITEOUT
    (not with EXCHANGE); both names resolved without following a final symlink, then the
    host's renameat2 on the two paths inside the root does the rest (EEXIST, ENOENT,
    EISDIR, ENOTDIR, ENOTEMPTY, EINVAL for a directory into itself: the host kernel's)."""
    flags &= 0xFFFF_FFFF
    if flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT):
        return -E.EINVAL
    if flags & RENAME_EXCHANGE and flags & (RENAME_NOREPLACE | RENAME_WHITEOUT):
        return -E.EINVAL
    old = fs_namei._entry_at(k, task, olddirfd, oldpath, "rename")
    if isinstance(old, int):
        return old
    new = fs_namei._entry_at(k, task, newdirfd, newpath, "rename")
    if isinstance(new, int):
        return new
    if old[0].dev != new[0].dev:
        return -EXDEV                   # across a tmpfs/ramfs mount's edge
    if k.vfs.mounts.table(old[0].ns) and any(
            "mount" in getattr(k.vfs.child(d, n), "extra", {}) for d, n in (old, new)):
        return -E.EBUSY                 # a mountpoint cannot be renamed or replaced
    cpu.charge(k.cost.syscall_body)
    odir, ndir = k.vfs.dir_handle(old[0]), k.vfs.dir_handle(new[0])
    if odir is None or ndir is None:
        return -E.ENOENT
    r = host_renameat2(odir.fd, old[1], ndir.fd, new[1], flags)
    if r == 0:
        fs_namei.d_move(k, _join(old[0].path, old[1]), _join(new[0].path, new[1]),
                        exchange=bool(flags & RENAME_EXCHANGE))
    if r == 0:                          # both directories change; the moved object's ctime too
        syscalls_inotify.fsnotify_move(k, cpu, syscalls_inotify.child_ref(k, old[0], old[1]),
                                        syscalls_inotify.child_ref(k, new[0], new[1]))
        fs_meta.name_update_time(k, cpu, old[0], "", created=False)
        fs_meta.name_update_time(k, cpu, new[0], "", created=False)
        moved = k.vfs.child(new[0], new[1])
        if moved is not None:
            fs_meta.file_update_time(k, cpu, moved, ctime_only=True)
    return r


def sys_linkat(k: "Kernel", cpu, task, olddirfd, oldpath, newdirfd, newpath, flags, *a):
    """do_linkat: AT_SYMLINK_FOLLOW (follow a final symlink of the old name: otherwise the
    link is to the symlink itself) and AT_EMPTY_PATH (EINVAL otherwise); no hard link to a
    directory (EPERM)."""
    flags &= 0xFFFF_FFFF
    if flags & ~(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH):
        return -E.EINVAL
    node = fs_namei._lookup_at(k, task, olddirfd, oldpath, follow=bool(flags & AT_SYMLINK_FOLLOW),
                           empty_ok=bool(flags & AT_EMPTY_PATH))
    if isinstance(node, int):
        return node
    new = fs_namei._entry_at(k, task, newdirfd, newpath, "link")
    if isinstance(new, int):
        return new
    if node.is_dir:
        return -E.EPERM
    if node.host is None or node.dev != new[0].dev:
        return -EXDEV                   # (a tmpfs/ramfs mount is another file system)
    cpu.charge(k.cost.syscall_body)
    ndir = k.vfs.dir_handle(new[0])
    if ndir is None:
        return -E.ENOENT
    try:
        os.link(node.host.name, new[1], src_dir_fd=node.host.dir.fd, dst_dir_fd=ndir.fd,
                follow_symlinks=False)
    except OSError as e:
        return -(e.errno or E.EACCES)
    fs_meta.name_update_time(k, cpu, new[0], "", created=False)
    fs_meta.file_update_time(k, cpu, node, ctime_only=True)     # its link count changed
    syscalls_inotify.fsnotify(k, cpu, syscalls_inotify.child_ref(k, new[0], new[1]), syscalls_inotify.IN_CREATE)
    return 0


def sys_symlinkat(k: "Kernel", cpu, task, target_ptr, newdirfd, linkpath, *a):
    """do_symlinkat: the target is stored as given (any string up to PATH_MAX, resolved
    later inside the guest's root by the walk, never by the host)."""
    target = fs_namei._user_path(k, task, target_ptr)
    if isinstance(target, int):
        return target
    if not target:
        return -E.ENOENT
    new = fs_namei._entry_at(k, task, newdirfd, linkpath, "symlink")
    if isinstance(new, int):
        return new
    cpu.charge(k.cost.syscall_body)
    ndir = k.vfs.dir_handle(new[0])
    if ndir is None:
        return -E.ENOENT
    try:
        # stored as given: only emukern's walk ever reads it (the host never follows it: every
        # host access is one name under a held handle, with O_NOFOLLOW)
        os.symlink(target, new[1], dir_fd=ndir.fd)
    except OSError as e:
        return -(e.errno or E.EACCES)
    fs_meta.name_update_time(k, cpu, new[0], new[1])
    syscalls_inotify.fsnotify(k, cpu, syscalls_inotify.child_ref(k, new[0], new[1]), syscalls_inotify.IN_CREATE)
    return 0


# ---- mknodat (fs/namei.c do_mknodat) ----------------------------------------------------------
def sys_mknodat(k: "Kernel", cpu, task, dirfd, path_ptr, mode, dev, *a):
    """S_IFREG (or type 0) makes an empty regular file, S_IFIFO a FIFO (its host node is only a
    name: opening it attaches to an in-kernel pipe, fs/fifo.py).  Device nodes (S_IFCHR/S_IFBLK)
    and sockets are EPERM: the root is modelled as a nodev mount."""
    cpu.charge(k.cost.syscall_body)
    mode &= 0xFFFFFFFF
    kind = mode & S_IFMT
    if kind not in (0, S_IFREG, S_IFIFO, 0o020000, 0o060000, 0o140000):
        return -E.EINVAL
    path = fs_namei._user_path(k, task, path_ptr)      # type: ignore[attr-defined]
    if isinstance(path, int):
        return path
    if not isinstance(fs_namei.path_lookup(k, task, dirfd, path, follow=False), int):  # type: ignore[attr-defined]
        return -E.EEXIST
    if kind == S_IFIFO:
        return _mkfifo(k, cpu, task, dirfd, path, mode)
    if kind not in (0, S_IFREG):
        return -E.EPERM
    made = fs_namei._create(k, task, dirfd, path, mode & 0o7777)      # type: ignore[attr-defined]
    if isinstance(made, int):
        return made
    parent = k.vfs.walk(os.path.dirname(made.path) or "/", k.vfs.root_node(made.ns))
    if not isinstance(parent, int):
        fs_meta.name_update_time(k, cpu, parent, os.path.basename(made.path))
    syscalls_inotify.fsnotify(k, cpu, made.host, syscalls_inotify.IN_CREATE)
    return 0


def _mkfifo(k: "Kernel", cpu, task, dirfd, path: str, mode: int) -> int:
    """vfs_mknod of S_IFIFO: a host FIFO node (mkfifoat, never opened) in the writable root;
    EROFS when the root is read-only or the directory is a synthetic one."""
    pn = fs_namei.lookup_parent(k, task, dirfd, path)
    if isinstance(pn, int):
        return pn
    parent, name = pn
    hdir = fs_namei.new_name_dir(k, parent)
    if isinstance(hdir, int):
        return hdir
    try:
        os.mkfifo(name, mode & 0o7777 & ~fs_of(task).umask, dir_fd=hdir.fd)
    except OSError as e:
        return -(e.errno or E.EACCES)
    fs_meta.name_update_time(k, cpu, parent, name)
    return 0
