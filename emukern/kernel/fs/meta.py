"""File metadata and file-to-file syscalls: chmod/chown/utimensat, truncate/fallocate, flock,
mknodat (regular files), sendfile/copy_file_range, and the xattr family.

Where metadata lives: an overlay on the Vfs (``Vfs.meta``), keyed by the *host inode* of a root
object ((st_dev, st_ino), used only as a key, never reported) or by (dev, guest path) for a
synthetic /proc or /dev node.  Keying by inode makes the overlay follow the file through rename
and hard links, as an inode's attributes do in Linux.  Mode, owner and times set by the guest are
never applied to the host file (a guest chmod 000 must not lock emukern itself out, a guest chown
cannot be done by an unprivileged host user, and host times are host facts): stat reports the
overlay, so the same inputs give the same bytes.  An object the guest never changed keeps the
synthesised values stat always gave (owner 0, times 0).
"""
from __future__ import annotations

import os
from typing import Any

from emukern.kernel import errno as E
from emukern.kernel.files import OutputFile, PipeEnd, WaitQueue
from emukern.kernel.fs import EOVERFLOW, EROFS, EXDEV
from emukern.kernel.fs.file import MAX_IO, DevNull, HostFile, VfsFile, write_kernel_bytes
from emukern.kernel.fs.vfs import S_IFDIR, S_IFIFO, S_IFLNK, S_IFMT, S_IFREG, Node, fs_of
from emukern.kernel.sysret import BLOCK
from emukern.kernel.cred import cred_of
from typing import TYPE_CHECKING
from emukern.kernel import errno as E
from emukern.kernel.files import WaitQueue
from emukern.kernel.fs import EROFS
from emukern.kernel.fs import namei as fs_namei
from emukern.kernel.fs.file import HostFile
from emukern.kernel.fs.file import write_kernel_bytes
from emukern.kernel.fs.vfs import Node
from emukern.kernel.fs.vfs import S_IFDIR
from emukern.kernel.fs.vfs import S_IFLNK
from emukern.kernel.fs.vfs import S_IFMT
from emukern.kernel.cred import cred_of
from typing import Any
import os
if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


AT_FDCWD, AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH = -100, 0x100, 0x1000
UTIME_NOW, UTIME_OMIT = (1 << 30) - 1, (1 << 30) - 2
S_ISUID, S_ISGID, S_IXGRP = 0o4000, 0o2000, 0o010
FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE = 0x01, 0x02
FALLOC_SUPPORTED = 0x01 | 0x02 | 0x04 | 0x08 | 0x10 | 0x20 | 0x40   # FALLOC_FL_SUPPORTED_MASK
LOCK_SH, LOCK_EX, LOCK_NB, LOCK_UN = 1, 2, 4, 8
EOPNOTSUPP, EFBIG, ESPIPE, ENODEV, EWOULDBLOCK = 95, 27, 29, 19, 11
MAX_LFS = (1 << 63) - 1
PROC_DEV = 0x16


def _s32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


def _s64(v: int) -> int:
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >> 63 else v


def _copy_loop(read_at: Any, put: Any, count: int) -> int:
    """The splice loop of sendfile and copy_file_range: up to ``count`` bytes, 64 KiB at a time,
    ``read_at(n, done)`` then ``put(data, done)``; an error counts only when nothing was copied
    yet, and a short write or the end of the input ends it."""
    done = 0
    while done < count:
        data = read_at(min(count - done, 1 << 16), done)
        if isinstance(data, int):
            return done or data
        if not data:
            break
        n = put(data, done)
        if n < 0:
            return done or n
        done += n
        if n < len(data):
            break
    return done


# ---- the overlay -----------------------------------------------------------------------------
def _meta_store(k: "Kernel") -> dict:
    store = getattr(k.vfs, "meta", None)
    if store is None:
        store = k.vfs.meta = {}
    return store


def _meta_key(node: Node, f: Any = None) -> tuple | None:
    if node.host is None:
        return ("syn", node.dev, node.path)
    try:
        s = os.fstat(f.fd) if isinstance(f, HostFile) and f.fd >= 0 else os.lstat(node.host)
    except OSError:
        return None
    return ("host", s.st_dev, s.st_ino)


def meta_of(k: "Kernel", node: Node, f: Any = None) -> dict | None:
    """The overlay entry of ``node`` (mode, uid, gid, atime, mtime, ctime), or None."""
    store = getattr(k.vfs, "meta", None)
    if not store:
        return None
    key = _meta_key(node, f)
    return store.get(key) if key is not None else None


def apply_meta(k: "Kernel", fields: dict[str, int], node: Node, f: Any = None) -> dict[str, int]:
    """stat_fields with what chmod/chown/utimensat changed (called by fstat/stat/statx)."""
    m = meta_of(k, node, f)
    if m:
        fields = dict(fields)
        fields.update(m)
    return fields


def _meta_entry(k: "Kernel", node: Node) -> dict:
    key = _meta_key(node)
    store = _meta_store(k)
    if key not in store:
        store[key] = {"mode": node.mode, "uid": 0, "gid": 0}
    return store[key]


def _now(k: "Kernel", cpu) -> tuple[int, int]:
    ns = int(k.clock.ns(cpu.now))          # CLOCK_REALTIME (the simulated clock)
    return ns // 10**9, ns % 10**9


def _setattr_ok(k: "Kernel", node: Node) -> int:
    """The checks notify_change's callers make before anything changes: a read-only root
    (mnt_want_write: EROFS)."""
    if node.host is not None and not k.vfs.writable:
        return -EROFS
    return 0


def _node_at(k: "Kernel", task, dirfd, path_ptr, flags) -> Node | int:
    """user_path_at with AT_SYMLINK_NOFOLLOW / AT_EMPTY_PATH."""
    return fs_namei._lookup_at(k, task, dirfd, path_ptr, follow=not flags & AT_SYMLINK_NOFOLLOW,  # type: ignore[attr-defined]
                           empty_ok=bool(flags & AT_EMPTY_PATH))


# ---- chmod (fs/open.c chmod_common) ----------------------------------------------------------
def _chmod(k: "Kernel", cpu, task, node: Node, mode: int) -> int:
    cpu.charge(k.cost.syscall_body)
    r = _setattr_ok(k, node)
    if r:
        return r
    if node.dev == PROC_DEV:
        return -E.EPERM                     # proc_setattr refuses ATTR_MODE
    m = _meta_entry(k, node)
    c = cred_of(task)
    if c.fsuid != 0 and c.fsuid != m["uid"]:
        return -E.EPERM                     # inode_owner_or_capable
    m["mode"] = (node.mode & S_IFMT) | (mode & 0o7777)
    m["ctime"] = _now(k, cpu)
    return 0


# ---- chown (fs/open.c chown_common, chown_ok) ------------------------------------------------
def _chown(k: "Kernel", cpu, task, node: Node, uid: int, gid: int) -> int:
    cpu.charge(k.cost.syscall_body)
    uid, gid = uid & 0xFFFFFFFF, gid & 0xFFFFFFFF
    r = _setattr_ok(k, node)
    if r:
        return r
    if node.dev == PROC_DEV:
        return -E.EPERM
    m = _meta_entry(k, node)
    c = cred_of(task)
    if c.euid != 0:
        # chown_ok / chgrp_ok: only root gives a file away; the owner may set its group
        # to one it belongs to
        if uid != 0xFFFFFFFF and uid != m["uid"]:
            return -E.EPERM
        if gid != 0xFFFFFFFF and gid != m["gid"] and (c.euid != m["uid"] or
                                                      gid not in (c.egid, *getattr(c, "groups", ()))):
            return -E.EPERM
    if uid != 0xFFFFFFFF:
        m["uid"] = uid
    if gid != 0xFFFFFFFF:
        m["gid"] = gid
    if node.kind != S_IFDIR and node.kind != S_IFLNK:
        # chown_common sets ATTR_KILL_SUID|ATTR_KILL_SGID for a non-directory: setuid goes,
        # setgid only if group-executable (a mandatory-locking setgid stays)
        mode = m["mode"]
        mode &= ~S_ISUID
        if mode & S_IXGRP:
            mode &= ~S_ISGID
        m["mode"] = mode
    m["ctime"] = _now(k, cpu)
    return 0


# ---- flock (fs/locks.c flock_lock_inode) -------------------------------------------------------
def _flocks(k: "Kernel", key) -> dict:
    table = getattr(k, "_flock_table", None)
    if table is None:
        table = k._flock_table = {}
    return table.setdefault(key, {"holders": {}, "wq": WaitQueue("flock")})


def _wake_all(k: "Kernel", cpu, wq: WaitQueue) -> None:
    for t in list(wq.waiters):
        wq.remove(t)
        k.sched.wake_up(t, cpu.now)


def flock_release(k: "Kernel", cpu, f) -> None:
    """locks_remove_file at the last close of ``f``: its flock locks go, waiters wake."""
    table = getattr(k, "_flock_table", None)
    for key in getattr(f, "_flock_keys", ()):
        ent = table.get(key) if table else None
        if ent is not None and ent["holders"].pop(f, None) is not None:
            _wake_all(k, cpu, ent["wq"])


# ---- sendfile / copy_file_range (fs/read_write.c do_sendfile, vfs_copy_file_range) -------------
def _put(k: "Kernel", f, data: bytes, off: int | None) -> int:
    """Write kernel bytes to ``f`` (the write side of a splice)."""
    n = write_kernel_bytes(f, data, off)
    return -E.EINVAL if n is None else n


# ---- xattrs (fs/xattr.c) ------------------------------------------------------------------------
# emukern's file systems carry no extended attributes: the root is modelled as a file system
# mounted without user xattrs, so every call that reaches a file answers EOPNOTSUPP, after the
# path lookup / fd check Linux does first (ENOENT, EBADF, EFAULT stay what they are).
def _xattr_path(k: "Kernel", cpu, task, path_ptr, follow: bool) -> int:
    cpu.charge(k.cost.syscall_body)
    node = fs_namei._lookup_at(k, task, AT_FDCWD, path_ptr, follow=follow)   # type: ignore[attr-defined]
    return node if isinstance(node, int) else -EOPNOTSUPP


def _xattr_fd(k: "Kernel", cpu, task, fd) -> int:
    cpu.charge(k.cost.syscall_body)
    return -E.EBADF if task.files.get(_s32(fd)) is None else -EOPNOTSUPP
