"""flock <-> fs/locks.c.

``sys_flock`` takes, converts or drops a shared or exclusive lock held by the open file
description (so dup and fork share it), sleeping unless LOCK_NB; a description closed for the
last time no longer holds its lock.  fcntl's record locks (F_SETLK, in fs/locks.py) are a separate
table: flock and POSIX locks never conflict, as on Linux.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.fs import meta as fs_meta
from emukern.kernel.fs.meta import EWOULDBLOCK, LOCK_EX, LOCK_NB, LOCK_SH, LOCK_UN, _s32
from emukern.kernel.sysret import BLOCK

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_flock(k: "Kernel", cpu, task, fd, cmd, *a):
    """An flock lock belongs to the open file description (shared by dup and fork), so the
    holder is the File; a holder whose description was closed for the last time (refs 0)
    no longer holds it (locks_remove_file)."""
    cpu.charge(k.cost.syscall_body)
    f = task.files.get(_s32(fd))
    if f is None:
        return -E.EBADF
    cmd &= 0xFFFFFFFF
    kind = cmd & ~LOCK_NB
    if kind not in (LOCK_SH, LOCK_EX, LOCK_UN):
        return -E.EINVAL
    node = getattr(f, "node", None)
    key = fs_meta._meta_key(node, f) if node is not None else ("file", id(f))
    ent = fs_meta._flocks(k, key)
    holders = ent["holders"]
    for h in [h for h in holders if h.refs <= 0]:
        del holders[h]
    if kind == LOCK_UN:
        if holders.pop(f, None) is not None:
            fs_meta._wake_all(k, cpu, ent["wq"])
        return 0
    conflict = any(h is not f and (kind == LOCK_EX or t == LOCK_EX) for h, t in holders.items())
    if conflict:
        if cmd & LOCK_NB:
            return -EWOULDBLOCK
        # a conversion drops the old lock first (flock_lock_inode), then waits
        if holders.pop(f, None) is not None:
            fs_meta._wake_all(k, cpu, ent["wq"])
        k.sched.sleep_on(cpu, task, ent["wq"], "flock")
        return BLOCK
    holders[f] = kind
    if not hasattr(f, "_flock_keys"):
        f._flock_keys = set()
    f._flock_keys.add(key)
    f.close_wqs = getattr(f, "close_wqs", [])
    if ent["wq"] not in f.close_wqs:
        f.close_wqs.append(ent["wq"])    # woken at the last close (HostFile.on_close)
    return 0
