"""The context switch's register batches (Cpu._make_ctx_batch): save_context and load_context move
a task's pt_regs in one libunicorn call each way, and must move exactly what the per-register
reads and writes they replaced did."""
from __future__ import annotations

from unicorn import arm64_const as A
from unicorn import riscv_const as R

from emukern.machine.clock import Clock


def test_riscv64_context_round_trip() -> None:
    from emukern.machine.cpu_riscv import RiscvCpu
    cpu = RiscvCpu(0, Clock(), vlen=128)
    ctx = {"x": [0] + [0x1111_0000_0000_0000 + i for i in range(1, 32)], "pc": 0x1_0000}
    cpu.load_context(ctx)
    # what a register-by-register read sees
    assert [cpu.reg(i) for i in range(32)] == ctx["x"]
    assert cpu.get_pc() == 0x1_0000 == cpu.uc.reg_read(R.UC_RISCV_REG_PC)
    saved = cpu.save_context()
    assert saved == ctx
    assert saved["x"] is not ctx["x"]          # a snapshot, not the caller's list
    # a second context over the first: nothing of the first is left
    other = {"x": [0] + [7 * i for i in range(1, 32)], "pc": 0x2_0004}
    cpu.load_context(other)
    assert cpu.save_context() == other


def test_arm64_context_round_trip() -> None:
    from emukern.machine.cpu_arm64 import Arm64Cpu
    cpu = Arm64Cpu(0, Clock())
    ctx = {"x": [0x2222_0000_0000_0000 + i for i in range(31)], "sp": 0x7FFF_F000, "pc": 0x40_0000,
           "nzcv": 0x6000_0000, "tpidr": 0x4A_0000}
    cpu.load_context(ctx)
    assert [cpu.reg(i) for i in range(31)] == ctx["x"]
    assert cpu.sp == 0x7FFF_F000
    assert cpu.get_pc() == 0x40_0000
    assert cpu.uc.reg_read(A.UC_ARM64_REG_NZCV) == 0x6000_0000
    assert cpu.uc.reg_read(A.UC_ARM64_REG_TPIDR_EL0) == 0x4A_0000
    assert cpu.save_context() == ctx
    # the flags of the next context replace these (NZCV is 32 bits: its slot's upper half stays 0)
    other = dict(ctx, x=list(range(31)), nzcv=0x2000_0000, tpidr=0, sp=0x7FFF_E000)
    cpu.load_context(other)
    assert cpu.uc.reg_read(A.UC_ARM64_REG_NZCV) == 0x2000_0000
    assert cpu.save_context() == other
    # a software step armed in the saved context comes back with it
    cpu.load_context(dict(ctx, ss=True))
    assert cpu.single_step and cpu.save_context()["ss"] is True
    cpu.load_context(ctx)
    assert not cpu.single_step and "ss" not in cpu.save_context()
