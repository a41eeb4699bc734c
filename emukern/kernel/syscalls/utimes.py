"""utimensat <-> fs/utimes.c.

``sys_utimensat`` sets atime/mtime (UTIME_NOW, UTIME_OMIT or explicit times) on a path or a
descriptor, in kernel/fs/meta.py's metadata for the node; only the owner or root may set
explicit times.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.files import OutputFile, PipeEnd
from emukern.kernel.fs import meta as fs_meta
from emukern.kernel.fs.meta import (
    AT_EMPTY_PATH,
    AT_FDCWD,
    AT_SYMLINK_NOFOLLOW,
    UTIME_NOW,
    UTIME_OMIT,
    _s32,
    _s64,
)
from emukern.kernel.cred import CAP_FOWNER, capable, cred_of

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


# ---- utimensat (fs/utimes.c) ------------------------------------------------------------------
def sys_utimensat(k: "Kernel", cpu, task, dirfd, path_ptr, times, flags, *a):
    cpu.charge(k.cost.syscall_body)
    flags &= 0xFFFFFFFF
    tv = None
    if times:
        if task.mm.find(times) is None:
            return -E.EFAULT
        raw = task.mm.read(times, 32)
        tv = [(_s64(int.from_bytes(raw[i:i + 8], "little")), _s64(int.from_bytes(raw[i + 8:i + 16], "little")))
              for i in (0, 16)]
        if tv[0][1] == UTIME_OMIT and tv[1][1] == UTIME_OMIT:
            return 0                        # nothing to do: not even the path is checked
        for _s, ns in tv:                   # nsec_valid
            if not (0 <= ns < 10**9 or ns in (UTIME_NOW, UTIME_OMIT)):
                return -E.EINVAL
    if flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH):
        return -E.EINVAL
    if not path_ptr and _s32(dirfd) != AT_FDCWD:
        if flags & AT_SYMLINK_NOFOLLOW:
            return -E.EINVAL                # do_utimes_fd: no flags
        f = task.files.get(_s32(dirfd))
        if f is None:
            return -E.EBADF
        node = getattr(f, "node", None)
        if node is None:
            return -E.EBADF if not isinstance(f, (PipeEnd, OutputFile)) else 0
    else:
        node = fs_meta._node_at(k, task, dirfd, path_ptr, flags)
        if isinstance(node, int):
            return node
    r = fs_meta._setattr_ok(k, node)
    if r:
        return r
    m = fs_meta._meta_entry(k, node)
    now = fs_meta._now(k, cpu)
    c = cred_of(task)
    if not capable(task, CAP_FOWNER) and c.euid != m["uid"] and (tv is None or any(ns != UTIME_NOW for _s, ns in tv)):
        return -E.EPERM                     # only the owner sets explicit times
    for name, t in zip(("atime", "mtime"), tv or [(0, UTIME_NOW)] * 2):
        if t[1] == UTIME_OMIT:
            continue
        m[name] = now if t[1] == UTIME_NOW else t
    m["ctime"] = now
    return 0
