"""The *xattr calls <-> fs/xattr.c.

Extended attributes are not supported: after the path or descriptor is checked, every
set/get/list/remove call returns EOPNOTSUPP (kernel/fs/meta.py's ``_xattr_path`` and
``_xattr_fd``), so the get/list/remove names are aliases of the set ones.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel.fs import meta as fs_meta

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_setxattr(k: "Kernel", cpu, task, p, *a):
    return fs_meta._xattr_path(k, cpu, task, p, True)


def sys_lsetxattr(k: "Kernel", cpu, task, p, *a):
    return fs_meta._xattr_path(k, cpu, task, p, False)


def sys_fsetxattr(k: "Kernel", cpu, task, fd, *a):
    return fs_meta._xattr_fd(k, cpu, task, fd)


sys_getxattr, sys_listxattr, sys_removexattr = (sys_setxattr, sys_setxattr, sys_setxattr)


sys_lgetxattr, sys_llistxattr, sys_lremovexattr = (sys_lsetxattr, sys_lsetxattr, sys_lsetxattr)


sys_fgetxattr, sys_flistxattr, sys_fremovexattr = (sys_fsetxattr, sys_fsetxattr, sys_fsetxattr)
