"""syscalls.rseq: generated from the kernel mixins."""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_rseq(k: "Kernel", cpu, task, *a):
    return -E.ENOSYS          # restartable sequences are not modelled; libcs fall back
