"""unshare, setns, mount, umount2, mount_setattr and the new mount API <-> kernel/fork.c's
ksys_unshare, kernel/nsproxy.c and fs/namespace.c.

Two namespace kinds are modelled, for a caller with CAP_SYS_ADMIN (``capable``, kernel/cred.py):
pid namespaces in full (kernel/pid.py: unshare(CLONE_NEWPID) makes the caller's *next child*
the init of a new namespace, and setns joins one through a pidfd), and mount namespaces with
the mounts a test program makes: a tmpfs or ramfs mounted by a caller with CAP_SYS_ADMIN (in
the initial namespace too, as root may) is attached in the caller's namespace only, on a
private host backing (kernel/fs/mount.py), and umount2 detaches it; besides those, a task in a
namespace of its own may change propagation flags and mount proc again over /proc, which from
then on shows that mount namespace the pid namespace of the task that mounted it
(kernel/pid.py's proc_pid_ns).  Bind mounts, moves, remounts and other file system types are
still refused.  Network namespaces hold what
AF_UNIX can see (kernel/net/net_namespace.py: an abstract name table and socket counts of
their own); unshare(CLONE_NEWNET) moves the caller itself, so its next sockets live there.
Every other namespace kind (uts, ipc, user, cgroup, time) still answers as Linux answers a caller without
CAP_SYS_ADMIN: EPERM, as do joining one and any other change to the mounts.  What unshare can
do without a namespace it does: give the caller its own descriptor table (CLONE_FILES) or
fs_struct (CLONE_FS) when it shares them, and accept the flags that ask for nothing the caller
shares.  Argument checks that Linux makes before the privilege check are made first, with its
errnos.
"""
from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING

from emukern.errors import MemoryFault
from emukern.kernel import errno as E
from emukern.kernel import pid as kpid
from emukern.kernel.cred import CAP_SYS_ADMIN, capable
from emukern.kernel.fs import meta as fs_meta
from emukern.kernel.fs import mount as fs_mount
from emukern.kernel.fs import namei as fs_namei
from emukern.kernel.fs.pidfs import PidFdFile
from emukern.kernel.fs.vfs import S_IFDIR, HostDir
from emukern.kernel.fs.vfs import fs_of
from emukern.kernel.net import net_namespace
from emukern.kernel.resource import dup_fd_fits
from emukern.kernel.syscalls import CLONE_FILES, CLONE_FS, CLONE_SIGHAND, CLONE_THREAD, CLONE_VM

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel

CLONE_NEWTIME = 0x80
CLONE_NEWNS = 0x20000
CLONE_SYSVSEM = 0x40000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_NEWNS_ALL = (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER
                   | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWTIME)
UNSHARE_VALID = CLONE_THREAD | CLONE_FS | CLONE_SIGHAND | CLONE_VM | CLONE_FILES | CLONE_SYSVSEM | CLONE_NEWNS_ALL


def _shared(k: "Kernel", task, attr: str) -> bool:
    """Another live task holds the same object (a thread, or a CLONE_FILES/CLONE_FS child)."""
    mine = getattr(task, attr)
    return any(t is not task and t.alive and getattr(t, attr) is mine for t in k.tasks.values())


def sys_unshare(k: "Kernel", cpu, task, flags, *a):
    cpu.charge(k.cost.syscall_body)
    flags &= 0xFFFFFFFF
    if flags & ~UNSHARE_VALID:
        return -E.EINVAL
    # the implications ksys_unshare adds: a new user namespace leaves the thread group and the
    # fs_struct, unsharing the mm means unsharing the handlers, which means leaving the group,
    # and a new mount namespace needs its own fs_struct
    if flags & CLONE_NEWUSER:
        flags |= CLONE_THREAD | CLONE_FS
    if flags & CLONE_VM:
        flags |= CLONE_SIGHAND
    if flags & CLONE_SIGHAND:
        flags |= CLONE_THREAD
    if flags & CLONE_NEWNS:
        flags |= CLONE_FS
    # check_unshare_flags: what cannot be left while others share it
    if flags & CLONE_THREAD and any(t is not task and t.alive and t.tgid == task.tgid
                                    for t in k.tasks.values()):
        return -E.EINVAL
    if flags & CLONE_SIGHAND and _shared(k, task, "sighand"):
        return -E.EINVAL
    if flags & CLONE_VM and task.mm.users > 1:
        return -E.EINVAL
    # unshare_fd comes before the namespaces in ksys_unshare: its EMFILE is answered first
    new_files = flags & CLONE_FILES and _shared(k, task, "files")
    if new_files and not dup_fd_fits(k, task.files.fds):
        return -E.EMFILE            # the copy would pass fs.nr_open (lowered since the fds opened)
    if flags & CLONE_NEWNS_ALL:
        # unshare_nsproxy_namespaces: every new namespace needs CAP_SYS_ADMIN, and the kinds
        # emukern has no model for are refused as if the caller lacked it
        if not capable(task, CAP_SYS_ADMIN) or flags & CLONE_NEWNS_ALL & ~(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET):
            return -E.EPERM
        if flags & CLONE_NEWPID and kpid.pid_ns_for_children(k, task) is not kpid.task_active_pid_ns(k, task):
            return -E.EINVAL        # copy_pid_ns: the children's namespace was chosen already
    if flags & CLONE_NEWPID:
        ns = kpid.create_pid_namespace(kpid.task_active_pid_ns(k, task))
        if ns is None:
            return -E.ENOSPC
        task.pid_ns_for_children = ns
    if flags & CLONE_NEWNS:
        task.mnt_ns = kpid.new_mount_ns(k, task.mnt_ns)
    if flags & CLONE_NEWNET:
        task.net_ns = net_namespace.copy_net_ns(k)     # (the sockets already open stay where they are)
    if flags & CLONE_FS and _shared(k, task, "fs"):
        task.fs = dataclasses.replace(fs_of(task))
    if new_files:
        task.files = task.files.dup_table()
    return 0


def sys_setns(k: "Kernel", cpu, task, fd, nstype, *a):
    """setns through a pidfd: join the namespaces of the process it names that ``nstype``
    lists (0: all of them).  Its pid namespace becomes the caller's pid_ns_for_children (the
    caller's next children are born there), which pidns_install allows for the caller's own
    namespace or one below it; its mount and network namespaces become the caller's.  The kinds emukern
    has one instance of are shared already, so joining them changes nothing.  A descriptor
    of any other kind names no namespace here (no /proc/<pid>/ns files to open)."""
    cpu.charge(k.cost.syscall_body)
    f = task.files.get(fd & 0xFFFFFFFF) if task.files is not None else None
    if f is None:
        return -E.EBADF
    nstype &= 0xFFFFFFFF
    if not isinstance(f, PidFdFile) or nstype & ~CLONE_NEWNS_ALL:
        return -E.EINVAL
    if not capable(task, CAP_SYS_ADMIN):
        return -E.EPERM
    if not any(t.alive for t in k.tasks.values() if t.tgid == f.task.tgid):
        return -E.ESRCH
    want = nstype or CLONE_NEWNS_ALL
    if want & CLONE_NEWPID:
        target = kpid.task_active_pid_ns(k, f.task)
        active = kpid.task_active_pid_ns(k, task)
        if not active.is_ancestor_of(target):
            return -E.EINVAL        # pidns_install: only the caller's namespace or one below
        task.pid_ns_for_children = None if target is active else target
    if want & CLONE_NEWNS:
        task.mnt_ns = f.task.mnt_ns
    if want & CLONE_NEWNET:
        task.net_ns = f.task.net_ns
    return 0


MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_NOATIME, MS_NODIRATIME, MS_RELATIME, MS_SILENT = \
    0x2, 0x4, 0x8, 0x400, 0x800, 1 << 21, 0x8000
MS_STRICTATIME, MS_LAZYTIME, MS_MGC_VAL = 1 << 24, 1 << 25, 0xC0ED0000
MNT_FORCE, MNT_DETACH, MNT_EXPIRE, UMOUNT_NOFOLLOW = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_SHARED, MS_PRIVATE, MS_SLAVE, MS_UNBINDABLE, MS_REC = \
    0x20, 0x1000, 1 << 20, 1 << 18, 1 << 19, 1 << 17, 0x4000
_PROPAGATION = MS_SHARED | MS_PRIVATE | MS_SLAVE | MS_UNBINDABLE


def _own_mount_ns(task) -> bool:
    """may_mount with a namespace of the caller's own: CAP_SYS_ADMIN and an unshared tree."""
    return task.mnt_ns != 0 and capable(task, CAP_SYS_ADMIN)


def _user_str(task, addr: int) -> str | None:
    if not addr:
        return None
    try:
        return task.mm.read_cstr(addr, 4096).decode("utf-8", "surrogateescape")
    except MemoryFault:
        return None


def sys_mount(k: "Kernel", cpu, task, source, target, fstype, flags, data, *a):
    """mount: a new tmpfs/ramfs (do_new_mount, for a caller with CAP_SYS_ADMIN); in a mount
    namespace of the caller's own also a propagation change (MS_PRIVATE and its kin alone) and
    proc mounted over /proc (its numbers then the caller's pid namespace's); anything else is
    refused as before."""
    cpu.charge(k.cost.syscall_body)
    flags &= 0xFFFFFFFF
    made = do_new_mount(k, cpu, task, source, target, fstype, flags, data)
    if made is not None:
        return made
    if not _own_mount_ns(task):
        return -E.EPERM
    if flags & _PROPAGATION and not flags & ~(_PROPAGATION | MS_REC):
        return 0
    if _user_str(task, fstype) == "proc" and _user_str(task, target) in ("/proc", "/proc/"):
        # (proc_fill_super: the new /proc shows the mounter's pid namespace)
        k.init_pid_ns.proc_views[task.mnt_ns] = kpid.task_active_pid_ns(k, task)
        return 0
    return -E.EPERM


_MS_NEW_OK = MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME | MS_RELATIME \
    | MS_SILENT | MS_STRICTATIME | MS_LAZYTIME


def do_new_mount(k: "Kernel", cpu, task, source: int, target: int, fstype: int, flags: int,
                 data: int) -> int | None:
    """do_new_mount for the memory file systems (tmpfs, ramfs): a fresh private backing
    directory becomes the root of a mount attached at ``target`` in the caller's mount
    namespace only.  None: not such a mount (the caller keeps its old answer)."""
    if flags & 0xFFFF0000 == MS_MGC_VAL:
        flags &= 0xFFFF                  # the old magic number in the top half means nothing
    if flags & ~_MS_NEW_OK:
        return None                      # read-only, bind, move, remount...: as before
    kind = _user_str(task, fstype)
    if kind not in ("tmpfs", "ramfs"):
        return None
    if not capable(task, CAP_SYS_ADMIN):
        return -E.EPERM
    path = _user_str(task, target)
    if not path:
        return -E.EFAULT if target else -E.ENOENT
    node = fs_namei.path_lookup(k, task, -100, path)
    if isinstance(node, int):
        return node
    if not node.is_dir:
        return -E.ENOTDIR
    hdir = k.vfs.dir_handle(node) if node.host is not None else None
    if hdir is None:
        return -E.EPERM                  # /proc, /dev, the empty virtual root: emukern keeps them fixed
    # (a mount over the task's root or cwd is attached but does not move them: the walk starts
    # there and crosses mounts only on the way down, so a task sees it after chdir/chroot into
    # it through its parent, as on Linux)
    opts = fs_mount.parse_options(kind, _user_str(task, data) if data else None)
    if isinstance(opts, int):
        return opts
    tables = k.vfs.mounts
    backing = tables.new_backing()
    fd = os.open(backing, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    sb = os.fstat(fd)
    root = HostDir(fd, (sb.st_dev, sb.st_ino))
    m = fs_mount.Mount(kind, tables.alloc_dev(), backing, root, mode=opts.get("mode", 0o1777 if kind == "tmpfs" else 0o755),
                       uid=opts.get("uid", 0), gid=opts.get("gid", 0), size=opts.get("size", 0),
                       source=_user_str(task, source) or "none", mountpoint=node.path)
    # the root directory's owner and mode live in the metadata overlay, as every chmod'ed
    # inode's do (the host directory keeps emukern's own bits)
    fs_meta._meta_store(k)[("host", sb.st_dev, sb.st_ino)] = {"mode": S_IFDIR | m.mode,
                                                              "uid": m.uid, "gid": m.gid}
    tables.attach(task.mnt_ns, hdir.key, m)
    return 0


def do_umount(k: "Kernel", cpu, task, target: int, flags: int) -> int | None:
    """umount2 of a tmpfs/ramfs the caller's namespace mounted (MNT_DETACH or not: no file of
    it is ever busy here): the mountpoint shows what was under it again.  None: not such a
    mount."""
    path = _user_str(task, target)
    if not path:
        return None
    node = fs_namei.path_lookup(k, task, -100, path, follow=not flags & UMOUNT_NOFOLLOW)
    if isinstance(node, int):
        return None
    m = node.extra.get("mount")
    if m is None or node.path != m.mountpoint:
        return None
    if not capable(task, CAP_SYS_ADMIN):
        return -E.EPERM
    if flags & ~(MNT_FORCE | MNT_DETACH | MNT_EXPIRE | UMOUNT_NOFOLLOW):
        return -E.EINVAL
    return 0 if k.vfs.mounts.detach(task.mnt_ns, m) else -E.EINVAL


def sys_umount2(k: "Kernel", cpu, task, target, flags, *a):
    """umount2 of a tmpfs/ramfs the caller's namespace mounted; in a mount namespace of the
    caller's own also of /proc, which programs do just before mounting it again (emukern's
    /proc stays in place meanwhile); the rest of the tree stays."""
    cpu.charge(k.cost.syscall_body)
    done = do_umount(k, cpu, task, target, flags & 0xFFFFFFFF)
    if done is not None:
        return done
    if _own_mount_ns(task) and _user_str(task, target) in ("/proc", "/proc/"):
        return 0
    return -E.EPERM


def _no_privilege(k: "Kernel", cpu, task, *a):
    cpu.charge(k.cost.syscall_body)
    return -E.EPERM                  # may_mount(): CAP_SYS_ADMIN in the mount namespace's owner


# the mount tree is fixed: every other call that would change it fails its capability check
sys_pivot_root = _no_privilege
sys_mount_setattr = sys_open_tree = sys_move_mount = sys_fsopen = sys_fsmount = sys_fspick = _no_privilege
