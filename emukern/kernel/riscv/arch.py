"""RISC-V kernel glue: syscall ABI (a7, a0-a5 -> a0), FP context, traps, and the vector hooks.

The vector-state policy lives in :mod:`emukern.kernel.riscv.vector` (arch/riscv/kernel/vector.c,
arch/riscv/include/asm/vector.h); this file only calls its hook points where Linux does.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emukern.kernel.arch_base import ArchBase
from emukern.kernel.riscv import vector
from unicorn import riscv_const as R

from emukern.machine.cpu_riscv import VS_OFF, RiscvCpu
from emukern.machine.trap import Trap, TrapKind

if TYPE_CHECKING:
    from emukern.kernel.task import Task
    from emukern.machine.cpu_base import Cpu

A0, A7, SP, TP = 10, 17, 2, 4
_A0_REG = R.UC_RISCV_REG_X0 + A0


class RiscvThread:
    """thread_struct for RISC-V: scalar FP context plus the vector state (vector.py)."""

    def __init__(self) -> None:
        self.fp: dict[str, Any] | None = None
        self.v: Any = None


class RiscvArch(ArchBase):
    name = "riscv64"
    uname_machine = "riscv64"

    def make_cpu(self, index: int) -> RiscvCpu:
        c = self.k.config
        return RiscvCpu(index, self.k.clock, vlen=c.vlen, dlen=c.dlen, has_v=c.has_v)

    def boot(self) -> None:
        vector.riscv_v_setup(self.k)

    def hwcap(self) -> int:
        """riscv_fill_hwcap: one bit per single-letter extension of the harts' ISA string."""
        from emukern.kernel.riscv.hwprobe import machine_isa
        from emukern.loader.stack import riscv_isa_hwcap
        return riscv_isa_hwcap("rv64" + machine_isa(self.k)[0])

    def cpuinfo(self) -> str:
        from emukern.kernel.riscv.hwprobe import riscv_cpuinfo
        return riscv_cpuinfo(self.k)

    def syscall_nr(self, cpu: "Cpu") -> int:
        return cpu.reg(A7)

    def syscall_args(self, cpu: "Cpu") -> tuple[int, ...]:
        return tuple(cpu.reg(i) for i in range(10, 16))

    def set_syscall_return(self, cpu: "Cpu", value: int) -> None:
        cpu._write(_A0_REG, value)           # regs->a0 (hot path: straight to libunicorn)

    def initial_context(self, entry: int, sp: int) -> dict[str, Any]:
        x = [0] * 32
        x[SP] = sp
        return {"x": x, "pc": entry}

    def clone_context(self, ctx: dict[str, Any], newsp: int, tls: int | None) -> dict[str, Any]:
        x = list(ctx["x"])
        x[A0] = 0
        if newsp:
            x[SP] = newsp
        if tls is not None:
            x[TP] = tls
        return {"x": x, "pc": ctx["pc"]}

    def new_thread_state(self, task: "Task", parent: "Task | None", exec_: bool) -> RiscvThread:
        th = RiscvThread()
        if parent is not None and parent.thread is not None:
            th.fp = parent.thread.fp
        th.v = vector.riscv_v_new_task(self.k, task, parent, exec_)
        return th

    def exec_reset(self, cpu: "Cpu", task: "Task") -> None:
        assert isinstance(cpu, RiscvCpu)
        cpu.reset_fp()
        vector.riscv_v_exec(self.k, cpu, task)

    def exit_thread(self, cpu: "Cpu", task: "Task") -> None:
        vector.riscv_v_exit_thread(self.k, cpu, task)

    # --- hook points -------------------------------------------------------------------------
    def syscall_enter(self, cpu: "Cpu", task: "Task") -> str | None:
        if cpu.vs == VS_OFF:                                         # type: ignore[attr-defined]
            return None                     # V never used (or off): nothing to discard
        return vector.riscv_v_syscall_enter(self.k, cpu, task)      # riscv_v_vstate_discard()

    def exit_to_user(self, cpu: "Cpu", task: "Task") -> str | None:
        if not task.thread.v.defer_restore:  # the common case: only the flag test is charged
            cpu.sys_cycles += self.k.cost.tif_check
            return None
        return vector.riscv_v_exit_to_user(self.k, cpu, task)       # riscv_v_vstate_restore()

    def switch_from(self, cpu: "Cpu", prev: "Task") -> None:
        """__switch_to: __switch_to_fpu saves FP state; riscv_v_vstate_save for vectors."""
        assert isinstance(cpu, RiscvCpu)
        if prev.alive:
            prev.thread.fp = cpu.save_fp()
            cpu.charge(self.k.cost.fp_save)
        vector.riscv_v_switch_from(self.k, cpu, prev)

    def switch_to(self, cpu: "Cpu", nxt: "Task") -> None:
        assert isinstance(cpu, RiscvCpu)
        if nxt.thread.fp is not None:
            cpu.load_fp(nxt.thread.fp)
        else:
            cpu.reset_fp()
        cpu.charge(self.k.cost.fp_restore)
        vector.riscv_v_switch_to(self.k, cpu, nxt)

    def prctl(self, cpu: "Cpu", task: "Task", option: int, a2: int, a3: int, a4: int, a5: int) -> int | None:
        return vector.riscv_v_prctl(self.k, cpu, task, option, a2)

    def handle_trap(self, cpu: "Cpu", task: "Task", trap: Trap) -> None:
        if trap.kind is TrapKind.ILLEGAL:
            trap.handler = "do_trap_insn_illegal"
            # Linux: do_trap_insn_illegal -> riscv_v_first_use_handler before sending SIGILL
            if vector.riscv_v_first_use_handler(self.k, cpu, task, trap):
                return
        self.default_trap(cpu, task, trap)
