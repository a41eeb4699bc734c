"""arm64 undefined-instruction and system-register traps — arch/arm64/kernel/traps.c.

(First version: MRS emulation without the lock model; the seed-001 policies come next.)
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from emukern.kernel import errno as E
from emukern.machine.trap import Trap

if TYPE_CHECKING:
    from emukern.kernel.kernel import Kernel
    from emukern.kernel.task import Task
    from emukern.machine.cpu_arm64 import Arm64Cpu


def setup(k: "Kernel") -> None:
    from emukern.kernel.arm64.cpufeature import CpuIdRegs, SystemIdRegs
    base = CpuIdRegs.from_unicorn_max()
    k.id_regs = SystemIdRegs.homogeneous(k.config.cpus, base)  # type: ignore[attr-defined]


def try_emulate_mrs(k: "Kernel", cpu: "Arm64Cpu", task: "Task", insn: int) -> bool:
    from emukern.kernel.arm64.cpufeature import try_emulate_mrs_value
    res = try_emulate_mrs_value(insn, cpu.index, k.id_regs)  # type: ignore[attr-defined]
    if res is None:
        return False
    rt, value = res
    cpu.charge(k.cost.emulate_mrs)
    if rt != 31:
        cpu.set_reg(rt, value)
    cpu.set_pc(cpu.get_pc() + 4)
    return True


def do_el0_undef(k: "Kernel", cpu: "Arm64Cpu", task: "Task", trap: Trap) -> None:
    trap.handler = "do_el0_undef"
    cpu.charge(k.cost.undef_read_insn)
    insn = trap.insn if trap.insn is not None else 0
    if try_emulate_mrs(k, cpu, task, insn):
        trap.decision = "emulated MRS"
        return
    k.force_sig(cpu, task, E.SIGILL, trap, trap.detail or "undefined instruction")


def do_el0_sys(k: "Kernel", cpu: "Arm64Cpu", task: "Task", trap: Trap) -> None:
    trap.handler = "do_el0_sys"
    if try_emulate_mrs(k, cpu, task, trap.insn or 0):
        trap.decision = "emulated MRS (EC 0x18)"
        return
    k.force_sig(cpu, task, E.SIGILL, trap, "system register access not emulated")
