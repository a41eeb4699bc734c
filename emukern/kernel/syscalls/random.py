"""getrandom <-> drivers/char/random.c.

emukern's "randomness" is deterministic so that a run is reproducible: ``sys_getrandom``
fills the whole buffer (up to INT_MAX bytes, or up to a fault) with a fixed function of the
thread id and the byte's index modulo 256.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.errors import MemoryFault
from emukern.kernel import errno as E
from emukern.kernel.sysret import U64
from emukern.machine.memory import PAGE

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


INT_MAX = (1 << 31) - 1
_CHUNK = 1 << 16


def _pattern(tid: int) -> bytes:
    """The thread's 256 deterministic bytes, repeated along the buffer."""
    return bytes((tid * 131 + i * 17 + 7) & 0xFF for i in range(256))


def sys_getrandom(k: "Kernel", cpu, task, buf, count, flags, *a):
    """get_random_bytes_user: a request above INT_MAX is cut to INT_MAX, the whole buffer must
    lie in user space (import_ubuf's access_ok, else EFAULT), and the bytes are copied until the
    buffer is full or a copy faults: the call returns the bytes that landed, or EFAULT when
    none did.  (A buffer of n <= 256 bytes gets the same bytes as before this was cut at 256.)"""
    count = min(count & U64, INT_MAX)
    if not k.arch.access_ok(task, buf, count):
        return -E.EFAULT
    pat = _pattern(task.tid)
    done = 0
    while done < count:
        # up to a page boundary-aligned chunk; on a fault, page by page to find where it stops
        n = min(_CHUNK - (buf + done) % _CHUNK, count - done)
        try:
            task.mm.write(buf + done, _fill(pat, done, n))
            done += n
            continue
        except MemoryFault:
            pass
        end = done + n
        while done < end:
            m = min(PAGE - (buf + done) % PAGE, end - done)
            try:
                task.mm.write(buf + done, _fill(pat, done, m))
            except MemoryFault:
                return done if done else -E.EFAULT
            done += m
        return done if done else -E.EFAULT      # (a chunk faulted: a page of it did)
    return done


def _fill(pat: bytes, off: int, n: int) -> bytes:
    start = off % 256
    reps = (start + n + 255) // 256
    return (pat * reps)[start: start + n]
