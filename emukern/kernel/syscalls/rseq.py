"""rseq <-> kernel/rseq.c.

Restartable sequences are not modelled: ``sys_rseq`` returns ENOSYS, and the C libraries fall
back to their plain paths.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_rseq(k: "Kernel", cpu, task, *a):
    return -E.ENOSYS          # restartable sequences are not modelled; libcs fall back
