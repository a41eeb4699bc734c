"""ptrace <-> kernel/ptrace.c.

Only the syscall entry: the implementation is ``sys_ptrace`` in kernel/signal/ptrace.py (next
to the signal code it stops and resumes tasks through), imported at call time.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_ptrace(k: "Kernel", cpu, task, request, pid, addr, data, *a):
    from emukern.kernel.signal.ptrace import sys_ptrace      # kernel/ptrace.py
    cpu.charge(k.cost.syscall_body)
    return sys_ptrace(k, cpu, task, request, pid, addr, data)
