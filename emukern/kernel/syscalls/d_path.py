"""getcwd <-> fs/d_path.c.

``sys_getcwd`` writes the guest path of the task's cwd (the path inside the guest's root, never
the host's) with its NUL, or returns -ERANGE when the buffer is too small.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.fs.vfs import cwd_of

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


# ---- cwd -------------------------------------------------------------------------------------
def sys_getcwd(k: "Kernel", cpu, task, buf, size, *a):
    path = cwd_of(task, k.vfs).path.encode("utf-8", "surrogateescape") + b"\0"
    if size < len(path):
        return -E.ERANGE
    task.mm.write(buf, path)
    return len(path)
