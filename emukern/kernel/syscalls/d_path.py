"""syscalls.d_path: generated from the kernel mixins."""
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
