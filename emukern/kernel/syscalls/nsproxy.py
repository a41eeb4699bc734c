"""unshare, setns, mount, umount2, mount_setattr and the new mount API <-> kernel/fork.c's
ksys_unshare, kernel/nsproxy.c and fs/namespace.c.

emukern models one instance of every namespace and one mount tree, which the guest may not
change.  So the calls answer as Linux answers a caller without CAP_SYS_ADMIN: EPERM for a new
namespace, for joining one and for any change to the mounts.  What unshare can do without a
namespace it does: give the caller its own descriptor table (CLONE_FILES) or fs_struct
(CLONE_FS) when it shares them, and accept the flags that ask for nothing the caller shares.
Argument checks that Linux makes before the privilege check are made first, with its errnos.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.fs.vfs import fs_of
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
    if flags & CLONE_NEWNS_ALL:
        return -E.EPERM             # no CAP_SYS_ADMIN: one set of namespaces
    new_files = flags & CLONE_FILES and _shared(k, task, "files")
    if new_files and not dup_fd_fits(k, task.files.fds):
        return -E.EMFILE            # the copy would pass fs.nr_open (lowered since the fds opened)
    if flags & CLONE_FS and _shared(k, task, "fs"):
        task.fs = dataclasses.replace(fs_of(task))
    if new_files:
        task.files = task.files.dup_table()
    return 0


def sys_setns(k: "Kernel", cpu, task, fd, nstype, *a):
    cpu.charge(k.cost.syscall_body)
    if task.files is None or task.files.get(fd & 0xFFFFFFFF) is None:
        return -E.EBADF
    return -E.EINVAL                 # no descriptor names a namespace here (no /proc/<pid>/ns)


def _no_privilege(k: "Kernel", cpu, task, *a):
    cpu.charge(k.cost.syscall_body)
    return -E.EPERM                  # may_mount(): CAP_SYS_ADMIN in the mount namespace's owner


# the mount tree is fixed: every call that would change it fails its capability check
sys_mount = sys_umount2 = sys_pivot_root = _no_privilege
sys_mount_setattr = sys_open_tree = sys_move_mount = sys_fsopen = sys_fsmount = sys_fspick = _no_privilege
