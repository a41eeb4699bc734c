"""File metadata and file-to-file syscalls: chmod/chown/utimensat, truncate/fallocate, flock,
mknodat (regular files), sendfile/copy_file_range, and the xattr family.

Where metadata lives: an overlay on the Vfs (``Vfs.meta``), keyed by the *host inode* of a root
object ((st_dev, st_ino), used only as a key, never reported) or by (dev, guest path) for a
synthetic /proc or /dev node.  Keying by inode makes the overlay follow the file through rename
and hard links, as an inode's attributes do in Linux.  Mode, owner and times set by the guest are
never applied to the host file (a guest chmod 000 must not lock emukern itself out, a guest chown
cannot be done by an unprivileged host user, and host times are host facts): stat reports the
overlay, so the same inputs give the same bytes.  An object the guest never changed reports
owner 0 and the times the host's lstat gives (Debian's files keep their packages' mtimes, which
is what .pyc headers, make and tar compare); what the guest changes gets the guest's
CLOCK_REALTIME (``file_update_time``), and a synthetic object (/proc, /dev, pipes, sockets) the
machine's boot time.  The realtime clock itself is ``realtime_ns``: the boot instant the
machine was given (``--realtime``) plus the simulated time since boot.
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
from emukern.kernel.cred import CAP_CHOWN, CAP_FOWNER, capable, cred_of
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
    own = node.extra.get("inode")
    if own is not None:
        return ("inode", own)           # an unnamed inode (memfd): its name is not its identity
    if node.host is None:
        return ("syn", node.dev, node.path)
    try:
        s = os.fstat(f.fd) if isinstance(f, HostFile) and f.fd >= 0 else node.host.lstat()
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


def _host_stat(node: Node, f: Any = None) -> os.stat_result | None:
    """The host's stat of a root object (of the open descriptor when there is one), or None."""
    if node.host is None:
        return None
    try:
        return os.fstat(f.fd) if isinstance(f, HostFile) and f.fd >= 0 else node.host.lstat()
    except OSError:
        return None


def apply_meta(k: "Kernel", fields: dict[str, int], node: Node, f: Any = None) -> dict[str, int]:
    """stat_fields with the times and what chmod/chown/utimensat/writes changed (called by
    fstat/stat/statx): a root object's host times (seconds and nanoseconds), or the boot time
    for a synthetic one, then the overlay on top."""
    fields = dict(fields)
    s = _host_stat(node, f)
    if s is None or s.st_ctime_ns >= getattr(k.vfs, "host_t0", s.st_ctime_ns + 1):
        # synthetic, or changed on the host during this run by a path that did not stamp the
        # overlay: the boot time, never a reading of the host's clock
        fields.update(synthetic_times(k))
    else:
        fields.update(atime=divmod(s.st_atime_ns, 10**9), mtime=divmod(s.st_mtime_ns, 10**9),
                      ctime=divmod(s.st_ctime_ns, 10**9))
    store = getattr(k.vfs, "meta", None)
    if store:
        own = node.extra.get("inode")
        m = store.get(("inode", own) if own is not None else
                      ("syn", node.dev, node.path) if s is None else ("host", s.st_dev, s.st_ino))
        if m:
            fields.update(m)
    return fields


# ---- the realtime clock (kernel/time/timekeeping.c) ------------------------------------------
# CLOCK_REALTIME is CLOCK_MONOTONIC (the simulated clock, 0 at boot) plus the wall-clock instant
# of the boot, which is the machine's ``realtime`` option and never the host's clock: two runs of
# the same inputs read the same dates.  (Linux keeps the same split: tk->offs_real.)
REALTIME_CLOCKS = (0, 5, 8, 11)     # CLOCK_REALTIME, _COARSE, _ALARM and CLOCK_TAI (offset 0)


def realtime_base_ns(k: "Kernel") -> int:
    """The realtime clock at boot, in nanoseconds since 1970 (parsed once per machine)."""
    base = getattr(k, "_realtime_base", None)
    if base is None:
        base = k._realtime_base = k.config.realtime_ns()
    return base


def realtime_ns(k: "Kernel", cycles: int) -> int:
    """CLOCK_REALTIME at ``cycles`` since boot."""
    return realtime_base_ns(k) + int(k.clock.ns(cycles))


def realtime_to_cycles(k: "Kernel", ns: int) -> int:
    """The cycle at which CLOCK_REALTIME reads ``ns`` (0 for an instant before the boot)."""
    return k.clock.cycles_for_ns(max(0, ns - realtime_base_ns(k)))


def name_update_time(k: "Kernel", cpu, parent: Node, name: str, created: bool = True) -> None:
    """A name was added to (``created``: the new object's three times too) or removed from the
    directory ``parent``: the directory's mtime and ctime change, as a create, mkdir, link,
    symlink, unlink or rename changes them on Linux."""
    file_update_time(k, cpu, parent)
    if created and parent.host is not None:
        child = k.vfs.child(parent, name)
        if child is not None:
            file_update_time(k, cpu, child, created=True)


def synthetic_times(k: "Kernel") -> dict[str, tuple[int, int]]:
    """atime/mtime/ctime of an object no file system stores (a /proc or /dev entry, a pipe, a
    socket): the boot time, the same in every run."""
    t = divmod(realtime_base_ns(k), 10**9)
    return {"atime": t, "mtime": t, "ctime": t}


def file_update_time(k: "Kernel", cpu, node: Node, f: Any = None, created: bool = False,
                     ctime_only: bool = False) -> None:
    """A write (or a truncate, or a new name in a directory) changes mtime and ctime to now, as
    Linux's file_update_time does; ``created`` sets atime too (a new inode's three times are its
    birth), ``ctime_only`` changes ctime alone (a rename or a new link).  Kept in the overlay: the host file's own times, set by the host's clock, are never
    reported for something the guest changed."""
    if node.host is None:
        return
    key = _meta_key(node, f)
    if key is None:
        return
    store = _meta_store(k)
    m = store.get(key)
    if m is None or created:                # (a new file may reuse a host inode: a fresh entry)
        m = store[key] = {"mode": node.mode, "uid": 0, "gid": 0}
        if not created:                     # the host's times stay what they were
            s = _host_stat(node, f)
            if s is not None:
                m.update(atime=divmod(s.st_atime_ns, 10**9), mtime=divmod(s.st_mtime_ns, 10**9))
    now = _now(k, cpu)
    m["ctime"] = now
    if not ctime_only:
        m["mtime"] = now
    if created:
        m["atime"] = now


def _meta_entry(k: "Kernel", node: Node) -> dict:
    key = _meta_key(node)
    store = _meta_store(k)
    if key not in store:
        store[key] = {"mode": node.mode, "uid": 0, "gid": 0}
    return store[key]


def _now(k: "Kernel", cpu) -> tuple[int, int]:
    """current_time(): CLOCK_REALTIME now, as (seconds, nanoseconds)."""
    return divmod(realtime_ns(k, cpu.now), 10**9)


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
    if c.fsuid != m["uid"] and not capable(task, CAP_FOWNER):
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
    if not capable(task, CAP_CHOWN):
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
