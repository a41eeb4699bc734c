"""rseq <-> kernel/rseq.c: registering and unregistering a thread's restartable-sequences area.

The checks are Linux's, in its order: unregistering needs the same area, length and signature
it was registered with (EINVAL, then EPERM for the signature); a second registration is EINVAL
for another area or length, EPERM for another signature and EBUSY when it repeats the first;
the area is at least 32 bytes, a 32-byte one aligned to 32, a longer one covering every field
(AT_RSEQ_FEATURE_SIZE) at struct rseq's alignment.  What registration sets up runs at the
return to user mode (kernel/rseq.py).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.kernel.signal import rseq as krseq
from emukern.kernel.mm.layout import TASK_SIZE

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_rseq(k: "Kernel", cpu, task, area, rseq_len, flags, sig, *a):
    area &= (1 << 64) - 1
    rseq_len &= 0xFFFFFFFF
    flags &= 0xFFFFFFFF
    sig &= 0xFFFFFFFF
    cpu.charge(k.cost.syscall_body)
    rs = task.rseq
    if flags & krseq.RSEQ_FLAG_UNREGISTER:
        if flags & ~krseq.RSEQ_FLAG_UNREGISTER:
            return -E.EINVAL
        if rs is None or rs.area != area or rs.length != rseq_len:
            return -E.EINVAL
        if rs.sig != sig:
            return -E.EPERM
        if not krseq.rseq_reset_rseq_cpu_node_id(task):
            return -E.EFAULT
        task.rseq = None
        return 0
    if flags:
        return -E.EINVAL
    if rs is not None:
        if rs.area != area or rs.length != rseq_len:
            return -E.EINVAL
        if rs.sig != sig:
            return -E.EPERM
        return -E.EBUSY                 # already registered, with the same arguments
    if rseq_len < krseq.ORIG_RSEQ_SIZE:
        return -E.EINVAL
    if rseq_len == krseq.ORIG_RSEQ_SIZE:
        if area % krseq.ORIG_RSEQ_SIZE:
            return -E.EINVAL
    elif area % krseq.RSEQ_ALIGN or rseq_len < krseq.RSEQ_FEATURE_SIZE:
        return -E.EINVAL
    if area + rseq_len > TASK_SIZE:     # access_ok
        return -E.EFAULT
    task.rseq = krseq.RseqState(area, rseq_len, sig)
    # the CPU fields are filled in before user code runs again: Linux does it on the way out
    # (TIF_NOTIFY_RESUME), and as nothing of the thread runs in between it is done here (an
    # unwritable area: SIGSEGV, pending on that same way out)
    krseq.rseq_handle_notify_resume(k, cpu, task)
    return 0
