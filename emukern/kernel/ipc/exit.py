"""What do_exit asks of SysV IPC: exit_sem (the thread group's SEM_UNDO adjustments, applied
when its last thread goes) and the end of exit_shm's work (a segment removed with IPC_RMID
is destroyed once the exiting mm was its last attach)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emukern.kernel.ipc import sem as ipc_sem
from emukern.kernel.ipc import shm as ipc_shm
from emukern.kernel.ipc.util import now_seconds

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def exit_sysvipc(k: "Kernel", cpu: Any, task: Any) -> None:
    ns = k.ipc_ns
    if not ns.undo and not ns.shm.objs:
        return                      # (the common case: a program that never used SysV IPC)
    if not any(t.alive and t is not task and t.tgid == task.tgid for t in k.tasks.values()):
        ipc_sem.exit_sem(k, ns, task.tgid, cpu.now)
    if task.mm is not None and task.mm.users <= 0:
        # shm_close for each attach the mm still had: the segment records the last detacher
        now = None
        for seg in ns.shm.objs.values():
            if any(m.buf is seg.buf for m in task.mm.mappings):
                seg.lpid = task.tgid
                seg.dtime = now = now if now is not None else now_seconds(k, cpu)
    ipc_shm.shm_gc(k, ns)
