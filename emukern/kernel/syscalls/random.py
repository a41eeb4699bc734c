"""getrandom <-> drivers/char/random.c.

emukern's "randomness" is deterministic so that a run is reproducible: ``sys_getrandom``
returns at most 256 bytes per call, a fixed function of the thread id and the byte's index.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel.sysret import U64

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_getrandom(k: "Kernel", cpu, task, buf, count, flags, *a):
    # deterministic "randomness": same run, same bytes
    count = min(count & U64, 256)
    data = bytes((task.tid * 131 + i * 17 + 7) & 0xFF for i in range(count))
    task.mm.write(buf, data)
    return count
