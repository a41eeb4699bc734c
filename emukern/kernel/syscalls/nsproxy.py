"""unshare, setns, mount, umount2, mount_setattr and the new mount API <-> kernel/fork.c's
ksys_unshare, kernel/nsproxy.c and fs/namespace.c.

Two namespace kinds are modelled, for a caller with CAP_SYS_ADMIN (``capable``, kernel/cred.py):
pid namespaces in full (kernel/pid.py: unshare(CLONE_NEWPID) makes the caller's *next child*
the init of a new namespace, and setns joins one through a pidfd), and mount namespaces as a
name with one property: emukern has one fixed mount tree, so in a namespace of its own a task
may make only the changes that leave the tree's files where they are -- propagation flags, and
proc mounted again over /proc, which from then on shows that mount namespace the pid namespace
of the task that mounted it (kernel/pid.py's proc_pid_ns).  Network namespaces hold what
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
from typing import TYPE_CHECKING

from emukern.errors import MemoryFault
from emukern.kernel import errno as E
from emukern.kernel import pid as kpid
from emukern.kernel.cred import CAP_SYS_ADMIN, capable
from emukern.kernel.fs.pidfs import PidFdFile
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
    """mount in a mount namespace of the caller's own: a propagation change (MS_PRIVATE and its
    kin alone) and proc mounted over /proc (its numbers then the caller's pid namespace's)
    succeed; anything else would change emukern's one tree, and is refused as before."""
    cpu.charge(k.cost.syscall_body)
    if not _own_mount_ns(task):
        return -E.EPERM
    flags &= 0xFFFFFFFF
    if flags & _PROPAGATION and not flags & ~(_PROPAGATION | MS_REC):
        return 0
    if _user_str(task, fstype) == "proc" and _user_str(task, target) in ("/proc", "/proc/"):
        # (proc_fill_super: the new /proc shows the mounter's pid namespace)
        k.init_pid_ns.proc_views[task.mnt_ns] = kpid.task_active_pid_ns(k, task)
        return 0
    return -E.EPERM


def sys_umount2(k: "Kernel", cpu, task, target, flags, *a):
    """umount2 in a mount namespace of the caller's own: /proc only, which programs do just
    before mounting it again (emukern's /proc stays in place meanwhile); the rest of the
    tree stays."""
    cpu.charge(k.cost.syscall_body)
    if _own_mount_ns(task) and _user_str(task, target) in ("/proc", "/proc/"):
        return 0
    return -E.EPERM


def _no_privilege(k: "Kernel", cpu, task, *a):
    cpu.charge(k.cost.syscall_body)
    return -E.EPERM                  # may_mount(): CAP_SYS_ADMIN in the mount namespace's owner


# the mount tree is fixed: every other call that would change it fails its capability check
sys_pivot_root = _no_privilege
sys_mount_setattr = sys_open_tree = sys_move_mount = sys_fsopen = sys_fsmount = sys_fspick = _no_privilege
