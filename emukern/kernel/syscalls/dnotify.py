"""fcntl(F_NOTIFY) <-> fs/notify/dnotify/dnotify.c, and the F_SETSIG/F_GETSIG signal a file's
owner gets (fs/fcntl.c's send_sigio, for the one user here).

dnotify is the old directory-change notice: a process asks, through a descriptor of a
directory, to hear of changes to the entries in it, and the kernel sends that process a signal
(SIGIO, or the one F_SETSIG chose, with si_fd naming the descriptor and si_code POLL_MSG) when
one happens.  Without DN_MULTISHOT the request is used up by the first notice.

It rides on the inotify machinery (``syscalls/inotify.py``): one extra ``fsnotify_group``,
``DnotifyGroup``, holds one watch per watched directory inode (the union of what its requests
want, as dnotify_recalc_inode_mask keeps it) and the requests themselves (``struct
dnotify_struct``: the file, its descriptor, the owner's descriptor table, the mask).  When
``fsnotify`` reports an event on a child of a watched directory it calls the group's
``queue``, which sends the signals instead of queueing an inotify record.  Only events the
inotify code reports can be heard: create, delete, rename (both names) and modify; DN_ACCESS
and DN_ATTRIB are accepted, as in Linux, and never fire because emukern reports no IN_ACCESS
or IN_ATTRIB.  A request goes when its descriptor is closed (dnotify_flush) or when F_NOTIFY
is called again with no event bits; here the close is noticed at the next event (the
descriptor no longer names that file in its table), which a program cannot tell apart.
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.kernel.signal import generate as signal_generate
from emukern.kernel.signal.state import KSigInfo
from emukern.kernel.syscalls import inotify as syscalls_inotify
from emukern.kernel.syscalls.inotify import (
    IN_ACCESS,
    IN_ATTRIB,
    IN_CREATE,
    IN_DELETE,
    IN_ISDIR,
    IN_MODIFY,
    IN_MOVED_FROM,
    IN_MOVED_TO,
    InotifyFile,
    Watch,
)

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

DN_ACCESS, DN_MODIFY, DN_CREATE, DN_DELETE, DN_RENAME, DN_ATTRIB = 0x1, 0x2, 0x4, 0x8, 0x10, 0x20
DN_MULTISHOT = 0x80000000
SIGIO = 29
POLL_MSG = 3                                  # si_code of a dnotify notice
POLLIN, POLLRDNORM, POLLMSG = 0x1, 0x40, 0x400
_NSIG = 64
_SIGPOLL = struct.Struct("<iiiiqi")           # signo, errno, code, pad, si_band, si_fd

# what each DN_* bit hears of, in inotify's event bits (convert_arg); a rename is heard as the
# two halves inotify reports
_DN_TO_IN = ((DN_DELETE, IN_DELETE | IN_MOVED_FROM), (DN_MODIFY, IN_MODIFY), (DN_ACCESS, IN_ACCESS),
             (DN_ATTRIB, IN_ATTRIB), (DN_RENAME, IN_MOVED_FROM | IN_MOVED_TO),
             (DN_CREATE, IN_CREATE | IN_MOVED_TO))


class DnRequest:
    """One F_NOTIFY request (``struct dnotify_struct``)."""

    def __init__(self, mask: int, multishot: bool, fd: int, filp: Any, files: Any, owner: int) -> None:
        self.mask, self.multishot, self.fd = mask, multishot, fd
        self.filp, self.files, self.owner = filp, files, owner


class DnotifyGroup(InotifyFile):
    """dnotify's one fsnotify group: a watch per directory, its requests beside it.  It is no
    descriptor of anyone's; ``queue`` is where fsnotify's events arrive."""
    kind = "dnotify"

    def __init__(self, k: "Kernel") -> None:
        super().__init__(0)
        self.k = k
        self.requests: dict[int, list[DnRequest]] = {}      # wd -> requests on that directory
        self.pending: list[tuple[DnRequest, int]] = []      # notices to send, as the event ends

    def queue(self, wd: int, mask: int, cookie: int, name: bytes) -> None:
        """dnotify_handle_event: an event on an entry of the directory (or on a directory)
        fires every request that wants it; a one-shot request is used up."""
        if not name and not mask & IN_ISDIR:
            return                                 # not about a child: dnotify does not care
        ev = mask & ~IN_ISDIR
        reqs = self.requests.get(wd, [])
        for r in list(reqs):
            if r.files.get(r.fd) is not r.filp:   # its descriptor was closed (dnotify_flush)
                reqs.remove(r)
                continue
            if not _in_mask([r]) & ev:
                continue
            self.pending.append((r, r.fd))
            if not r.multishot:
                reqs.remove(r)
        self._recalc(wd)

    def deliver(self, k: Any, cpu: Any) -> None:
        """The event's notices, sent once fsnotify has walked every watch."""
        todo, self.pending = self.pending, []
        for r, fd in todo:
            send_sigio(k, cpu, r.filp, r.owner, fd)

    def _recalc(self, wd: int) -> None:
        """dnotify_recalc_inode_mask: the watch wants what its requests want; none left, it goes."""
        reqs = self.requests.get(wd, [])
        w = self.watches.get(wd)
        if not reqs:
            self.requests.pop(wd, None)
            self.watches.pop(wd, None)
        elif w is not None:
            w.mask = _in_mask(reqs)


def _in_mask(reqs: list[DnRequest]) -> int:
    m = 0
    for r in reqs:
        for dn, inb in _DN_TO_IN:
            if r.mask & dn:
                m |= inb
    return m


def _group(k: "Kernel") -> DnotifyGroup:
    g = getattr(k, "dnotify_group", None)
    if g is None:
        g = DnotifyGroup(k)
        setattr(k, "dnotify_group", g)
    groups = syscalls_inotify._groups(k)
    if g not in groups:
        groups.append(g)
    return g


def send_sigio(k: "Kernel", cpu: Any, filp: Any, owner: int, fd: int) -> None:
    """send_sigio(fown, fd, POLL_MSG) for a process owner: the F_SETSIG signal with a
    _sigpoll siginfo (si_band POLLIN|POLLRDNORM|POLLMSG, si_fd), or plain SIGIO when none was
    set.  An owner that is gone gets nothing."""
    t = k.tasks.get(owner)
    if t is None or not t.alive:
        t = next((x for x in k.tasks.values() if x.tgid == owner and x.alive), None)
        if t is None:
            return
    signum = getattr(filp, "fown_signum", 0)
    if signum:
        raw = _SIGPOLL.pack(signum, 0, POLL_MSG, 0, POLLIN | POLLRDNORM | POLLMSG, fd)
        info = KSigInfo(signum, POLL_MSG, 0, value=0, raw=raw)
    else:
        info = KSigInfo(SIGIO, 0x80, 0, 0, 0)          # SEND_SIG_PRIV: si_code SI_KERNEL
    signal_generate.send_signal(k, cpu, t, info, True)




def fcntl_dirnotify(k: "Kernel", cpu: Any, task: Any, fd: int, filp: Any, arg: int) -> int:
    """fcntl(fd, F_NOTIFY, arg): with no event bit, drop this descriptor's request; else the
    descriptor must be a directory (ENOTDIR), the caller becomes the file's owner, and the
    request is added, or an existing one of the same file and table gains the bits."""
    arg &= 0xFFFFFFFF
    g = getattr(k, "dnotify_group", None)
    if not arg & ~DN_MULTISHOT:
        if g is not None:
            for wd, reqs in list(g.requests.items()):
                reqs[:] = [r for r in reqs if not (r.filp is filp and r.files is task.files)]
                g._recalc(wd)
        return 0
    node = getattr(filp, "node", None)
    if node is None or not node.is_dir:
        return -E.ENOTDIR
    key = syscalls_inotify._ino(node.host)
    if key is None or node.host is None:
        return -E.EINVAL                   # /proc and /dev: nothing reports changes there
    g = _group(k)
    filp.fown_owner = task.tgid            # __f_setown(filp, task_pid(current), PIDTYPE_TGID)
    mask = arg & ~DN_MULTISHOT
    wd = next((w.wd for w in g.watches.values() if w.key == key), None)
    if wd is None:
        wd = g.next_wd
        g.next_wd += 1
        g.watches[wd] = Watch(wd, key, 0, node.host)
    reqs = g.requests.setdefault(wd, [])
    for r in reqs:
        if r.filp is filp and r.files is task.files:       # attach_dn: more events, same request
            r.fd, r.mask = fd, r.mask | mask
            r.multishot = r.multishot or bool(arg & DN_MULTISHOT)
            break
    else:
        reqs.append(DnRequest(mask, bool(arg & DN_MULTISHOT), fd, filp, task.files, task.tgid))
    g._recalc(wd)
    return 0


def fcntl_setsig(filp: Any, arg: int) -> int:
    """F_SETSIG: the signal the owner gets (0: SIGIO without details); beyond _NSIG: EINVAL."""
    if arg < 0 or arg > _NSIG:
        return -E.EINVAL
    filp.fown_signum = arg
    return 0
