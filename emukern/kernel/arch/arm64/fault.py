"""Data aborts from EL0 that are not page faults (arch/arm64/mm/fault.c's fault_info table).

``do_mem_abort`` picks the handler from the syndrome's DFSC.  emukern's machine raises one such
abort besides translation/permission faults: the alignment fault (DFSC 0b100001) of a misaligned
LSE atomic on a CPU without FEAT_LSE2 (machine/a64_atomics.py).  Linux's ``do_alignment_fault``
sends it through ``do_bad_area``: SIGBUS with si_code BUS_ADRALN and si_addr = FAR, the ESR saved
for the signal frame's esr_context — no fixup for 64-bit tasks (the compat fixups are AArch32's).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.machine.a64_atomics import DFSC_ALIGNMENT
from emukern.machine.trap import ESR_EC_DABT_LOW, Trap, TrapKind

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel
    from emukern.kernel.task import Task
    from emukern.machine.cpu_base import Cpu
from emukern.kernel.signal import generate as signal_generate


def is_alignment_fault(trap: Trap) -> bool:
    return (trap.kind is TrapKind.MEM_FAULT and trap.esr is not None
            and trap.ec == ESR_EC_DABT_LOW and trap.esr & 0x3F == DFSC_ALIGNMENT)


def do_alignment_fault(k: "Kernel", cpu: "Cpu", task: "Task", trap: Trap) -> None:
    trap.handler = "do_alignment_fault"
    signal_generate.force_sig(k, cpu, task, E.SIGBUS, trap, trap.detail or f"alignment fault at {trap.addr:#x}")
