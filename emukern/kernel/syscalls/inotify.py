"""inotify_init1 / inotify_add_watch / inotify_rm_watch <-> fs/notify/inotify/inotify_user.c,
and ``fsnotify``, the one function the file syscalls call to report a change (the role of
Linux's fsnotify() and its fsnotify_create/_unlink/_move/_modify/_close wrappers).

A watch is on an inode: the (st_dev, st_ino) of the host object behind the guest name, so a
watched directory that is renamed keeps its watch.  Events are queued on the inotify file in
the order the guest's own syscalls make the changes — changes made by host processes outside
the run are not seen, which keeps runs repeatable.  Reported: IN_CREATE (open O_CREAT, mkdir,
mknod, symlink, link), IN_DELETE and IN_DELETE_SELF (unlink, rmdir; the watch then goes with
IN_IGNORED), IN_MOVED_FROM/IN_MOVED_TO with a shared cookie and IN_MOVE_SELF (rename),
IN_MODIFY (write to a file), IN_CLOSE_WRITE/IN_CLOSE_NOWRITE (close(2) of the last descriptor
of an open file; the closes at exit and exec report nothing), IN_IGNORED (inotify_rm_watch).
Not reported: IN_ACCESS, IN_OPEN, IN_ATTRIB, IN_UNMOUNT.

When no inotify watch exists, ``fsnotify`` returns before doing anything: a program that
never uses inotify runs exactly as before (no cycles charged, no host calls).
"""
from __future__ import annotations

import stat
import struct
from collections import deque
from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.kernel.files import File, WaitQueue
from emukern.kernel.fs import namei as fs_namei
from emukern.kernel.fs.vfs import HostRef
from emukern.kernel.sysret import BLOCK

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

IN_ACCESS, IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x1, 0x2, 0x4, 0x8
IN_CLOSE_NOWRITE, IN_OPEN, IN_MOVED_FROM, IN_MOVED_TO = 0x10, 0x20, 0x40, 0x80
IN_CREATE, IN_DELETE, IN_DELETE_SELF, IN_MOVE_SELF = 0x100, 0x200, 0x400, 0x800
IN_UNMOUNT, IN_Q_OVERFLOW, IN_IGNORED = 0x2000, 0x4000, 0x8000
IN_ONLYDIR, IN_DONT_FOLLOW, IN_EXCL_UNLINK = 0x01000000, 0x02000000, 0x04000000
IN_MASK_CREATE, IN_MASK_ADD, IN_ISDIR, IN_ONESHOT = 0x10000000, 0x20000000, 0x40000000, 0x80000000
IN_ALL_EVENTS = 0xFFF
ALL_INOTIFY_BITS = (IN_ALL_EVENTS | IN_UNMOUNT | IN_Q_OVERFLOW | IN_IGNORED | IN_ONLYDIR
                    | IN_DONT_FOLLOW | IN_EXCL_UNLINK | IN_MASK_CREATE | IN_MASK_ADD | IN_ISDIR
                    | IN_ONESHOT)
IN_CLOEXEC, IN_NONBLOCK = 0o2000000, 0o4000
MAX_QUEUED_EVENTS = 16384               # fs.inotify.max_queued_events
MAX_USER_WATCHES = 8192 * 16            # a modest default of fs.inotify.max_user_watches
EVENT = struct.Struct("<iIII")          # struct inotify_event without its name
_EPOLLIN_RDNORM = 0x41
FIONREAD = 0x541B
# events that are about the object itself (also reported to its directory, with the name)
_INODE_EVENTS = IN_ACCESS | IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CLOSE_NOWRITE | IN_OPEN


def _ino(host: HostRef | None) -> tuple[int, int] | None:
    """The (st_dev, st_ino) of the object a held name refers to (never followed)."""
    if host is None:
        return None
    try:
        st = host.lstat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _same(a: HostRef, b: HostRef) -> bool:
    """The same name in the same held directory."""
    return a.dir.key == b.dir.key and a.name == b.name


def child_ref(k: "Kernel", parent: Any, name: str) -> HostRef | None:
    """Where ``name`` in the guest directory ``parent`` is on the host: the parent's held
    handle and the name (None where the directory has no host object: /proc, /dev)."""
    if parent is None or parent.host is None:
        return None
    hdir = k.vfs.dir_handle(parent)
    return HostRef(hdir, name) if hdir is not None else None


class Watch:
    def __init__(self, wd: int, key: tuple[int, int], mask: int, host: HostRef) -> None:
        self.wd, self.key, self.mask, self.host = wd, key, mask, host


class InotifyFile(File):
    """An inotify instance (``struct fsnotify_group``): its watches and its event queue."""
    kind = "inotify"
    readable = True
    stat_mode = 0o600           # an anon inode, as anon_inode_getfd makes

    def __init__(self, flags: int) -> None:
        super().__init__()
        self.nonblock = bool(flags & IN_NONBLOCK)
        self.watches: dict[int, Watch] = {}
        self.next_wd = 1
        self.events: deque[bytes] = deque()
        self.wq = WaitQueue("inotify")
        self.overflowed = False
        self.groups: list[InotifyFile] = []

    def poll(self) -> int:
        return _EPOLLIN_RDNORM if self.events else 0

    def poll_queues(self) -> list[WaitQueue]:
        return [self.wq]

    def queue(self, wd: int, mask: int, cookie: int, name: bytes) -> None:
        """inotify_handle_inode_event: the event with its name NUL-padded to a multiple of 16;
        an event equal to the last one queued is dropped (inotify_merge); past the queue's
        limit, one IN_Q_OVERFLOW instead."""
        if name:
            padded = (len(name) + 1 + 15) // 16 * 16
            name = name + bytes(padded - len(name))
        ev = EVENT.pack(wd, mask, cookie, len(name)) + name
        if self.events and self.events[-1] == ev:
            return
        if len(self.events) >= MAX_QUEUED_EVENTS:
            if not self.overflowed:
                self.overflowed = True
                self.events.append(EVENT.pack(-1, IN_Q_OVERFLOW, 0, 0))
            return
        self.events.append(ev)

    def deliver(self, k: Any, cpu: Any) -> None:
        """An event was queued: wake the readers (dnotify's group sends signals instead)."""
        k.sched.wake_queue(self.wq, cpu.now)

    def kernel_read(self, k: Any, cpu: Any, task: Any, buf: int, count: int) -> Any:
        """inotify_read: whole events only; EINVAL when the first does not fit the buffer,
        EAGAIN (IN_NONBLOCK) or sleep when the queue is empty."""
        if not self.events:
            if self.nonblock:
                return -E.EAGAIN
            k.sched.sleep_on(cpu, task, self.wq, "inotify_read")
            return BLOCK
        out = bytearray()
        while self.events and len(out) + len(self.events[0]) <= count:
            out += self.events.popleft()
        if not out:
            return -E.EINVAL
        self.overflowed = False
        task.mm.write(buf, bytes(out))
        cpu.charge(k.cost.syscall_body)
        return len(out)

    def unlocked_ioctl(self, k: Any, cpu: Any, task: Any, request: int, arg: int) -> int:
        """inotify_ioctl: FIONREAD, the bytes a read would return now; anything else ENOTTY
        (INOTIFY_IOC_SETNEXTWD, a checkpoint/restore aid, is not modelled)."""
        cpu.charge(k.cost.syscall_body)
        if request != FIONREAD:
            return -25
        task.mm.write_u32(arg, sum(len(e) for e in self.events))
        return 0

    def kernel_write(self, k: Any, cpu: Any, task: Any, buf: int, count: int) -> Any:
        return -E.EINVAL                 # inotify_fops has no write

    def on_close(self) -> list[WaitQueue]:
        """The last descriptor went: the instance and its watches are gone."""
        if self in self.groups:
            self.groups.remove(self)
        return [self.wq]


def _groups(k: "Kernel") -> list[InotifyFile]:
    """The kernel's live inotify instances (made on the first inotify_init1)."""
    got = getattr(k, "inotify_groups", None)
    if got is None:
        got = []
        setattr(k, "inotify_groups", got)
    return got


def sys_inotify_init1(k: "Kernel", cpu, task, flags, *a):
    cpu.charge(k.cost.syscall_body)
    flags &= 0xFFFFFFFF
    if flags & ~(IN_CLOEXEC | IN_NONBLOCK):
        return -E.EINVAL
    f = InotifyFile(flags)
    fd = task.files.install(f, cloexec=bool(flags & IN_CLOEXEC))
    if fd >= 0:
        f.groups = _groups(k)
        f.groups.append(f)
    return fd


def _inotify_file(task, fd) -> InotifyFile | int:
    v = fd & 0xFFFFFFFF
    f = task.files.get(v - (1 << 32) if v >> 31 else v)
    if f is None:
        return -E.EBADF
    return f if isinstance(f, InotifyFile) else -E.EINVAL


def sys_inotify_add_watch(k: "Kernel", cpu, task, fd, pathname, mask, *a):
    """The checks in inotify_user.c's order: IN_MASK_ADD with IN_MASK_CREATE, no known bit
    (EINVAL), the descriptor (EBADF; EINVAL for another kind), the path (IN_DONT_FOLLOW,
    IN_ONLYDIR: ENOTDIR); then a new watch, or the existing one on that inode updated
    (replaced, OR-ed with IN_MASK_ADD, EEXIST with IN_MASK_CREATE)."""
    cpu.charge(k.cost.syscall_body)
    mask &= 0xFFFFFFFF
    if mask & IN_MASK_ADD and mask & IN_MASK_CREATE:
        return -E.EINVAL
    if not mask & ALL_INOTIFY_BITS:
        return -E.EINVAL
    f = _inotify_file(task, fd)
    if isinstance(f, int):
        return f
    node = fs_namei._lookup_at(k, task, -100, pathname, follow=not mask & IN_DONT_FOLLOW)
    if isinstance(node, int):
        return node
    if mask & IN_ONLYDIR and not node.is_dir:
        return -E.ENOTDIR
    key = _ino(node.host)
    if key is None or node.host is None:
        return -E.EINVAL if node.host is not None else -E.EACCES    # /proc and /dev: no events
    want = mask & (IN_ALL_EVENTS | IN_EXCL_UNLINK | IN_ONESHOT)
    for w in f.watches.values():
        if w.key == key:
            if mask & IN_MASK_CREATE:
                return -E.EEXIST
            w.mask = (w.mask | want) if mask & IN_MASK_ADD else want
            return w.wd
    if sum(len(g.watches) for g in _groups(k)) >= MAX_USER_WATCHES:
        return -28                        # ENOSPC: fs.inotify.max_user_watches
    wd = f.next_wd
    f.next_wd += 1
    f.watches[wd] = Watch(wd, key, want, node.host)
    return wd


def sys_inotify_rm_watch(k: "Kernel", cpu, task, fd, wd, *a):
    cpu.charge(k.cost.syscall_body)
    f = _inotify_file(task, fd)
    if isinstance(f, int):
        return f
    v = wd & 0xFFFFFFFF
    w = f.watches.pop(v - (1 << 32) if v >> 31 else v, None)
    if w is None:
        return -E.EINVAL
    f.queue(w.wd, IN_IGNORED, 0, b"")
    k.sched.wake_queue(f.wq, cpu.now)
    return 0


# ---- the events -------------------------------------------------------------------------------
def fsnotify(k: "Kernel", cpu: Any, host: HostRef | None, mask: int, isdir: bool = False,
             cookie: int = 0, old_host: HostRef | None = None) -> None:
    """Report ``mask`` for the object ``host`` names (after the change): to the
    watches on its directory, with its name, and for an event about the object itself (or
    its deletion or move) to the watches on it.  ``old_host``: a rename's old path (the
    IN_MOVED_FROM event is reported on its directory)."""
    groups = getattr(k, "inotify_groups", None)
    if not groups or host is None or not any(g.watches for g in groups):
        return
    if isdir:
        mask |= IN_ISDIR
    ev = mask & ~IN_ISDIR
    parent_key = host.dir.key
    name = host.name.encode("utf-8", "surrogateescape")
    self_key = _ino(host) if ev & (_INODE_EVENTS | IN_MOVED_TO) else None
    for g in list(groups):
        queued = False
        if ev & IN_DELETE:
            # the watched object itself is gone: IN_DELETE_SELF, then the watch goes with
            # IN_IGNORED — before the directory hears of the name (dentry_unlink_inode runs
            # ahead of fsnotify_delete's event on the parent)
            for w in [w for w in g.watches.values() if _same(w.host, host) and _ino(host) != w.key]:
                if w.mask & IN_DELETE_SELF:
                    g.queue(w.wd, IN_DELETE_SELF, 0, b"")
                g.queue(w.wd, IN_IGNORED, 0, b"")
                g.watches.pop(w.wd, None)
                queued = True
        for w in g.watches.values():             # the directory's watches, with the name
            if w.key == parent_key and w.mask & ev:
                g.queue(w.wd, mask, cookie, name)
                queued = True
        if self_key is not None:                 # then the object's own watches
            for w in g.watches.values():
                if w.key != self_key:
                    continue
                if ev & _INODE_EVENTS and w.mask & ev:
                    g.queue(w.wd, mask, 0, b"")
                    queued = True
                elif ev & IN_MOVED_TO:
                    w.host = host              # the watch follows its inode
                    if w.mask & IN_MOVE_SELF:
                        g.queue(w.wd, IN_MOVE_SELF | (mask & IN_ISDIR), 0, b"")
                        queued = True
        if queued:
            g.deliver(k, cpu)


def fsnotify_move(k: "Kernel", cpu: Any, old_host: HostRef | None, new_host: HostRef | None) -> None:
    """fsnotify_move: IN_MOVED_FROM on the old directory and IN_MOVED_TO on the new one, with
    one cookie (inotify_get_cookie: a counter), then IN_MOVE_SELF on the object."""
    groups = getattr(k, "inotify_groups", None)
    if not groups or not any(g.watches for g in groups) or old_host is None or new_host is None:
        return
    cookie = (getattr(k, "inotify_cookie", 0) + 1) & 0xFFFFFFFF or 1
    setattr(k, "inotify_cookie", cookie)
    try:
        isdir = stat.S_ISDIR(new_host.lstat().st_mode)
    except OSError:
        isdir = False
    fsnotify(k, cpu, old_host, IN_MOVED_FROM, isdir, cookie)
    fsnotify(k, cpu, new_host, IN_MOVED_TO, isdir, cookie)


def fsnotify_close(k: "Kernel", cpu: Any, f: Any) -> None:
    """__fput's fsnotify_close: IN_CLOSE_WRITE for a file opened for writing, else
    IN_CLOSE_NOWRITE, once its last descriptor is gone."""
    if f is None or f.refs != 0 or not getattr(k, "inotify_groups", None):
        return
    node = getattr(f, "node", None)
    if node is None or node.host is None:
        return
    fsnotify(k, cpu, node.host, IN_CLOSE_WRITE if f.writable else IN_CLOSE_NOWRITE, node.is_dir)


def fsnotify_create_open(k: "Kernel", cpu: Any, task: Any, fd: Any) -> None:
    """IN_CREATE for a file an open(O_CREAT) just made (open_last_lookups' fsnotify_create)."""
    if not getattr(k, "inotify_groups", None) or not isinstance(fd, int) or fd < 0:
        return
    node = getattr(task.files.get(fd), "node", None)
    if node is not None and node.created:
        fsnotify(k, cpu, node.host, IN_CREATE)
