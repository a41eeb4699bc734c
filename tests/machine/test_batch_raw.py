"""Cpu.make_batch_writer_raw / batch_writer_raw (machine/cpu_base.py): registers written from
their bytes, as a signal frame holds them (riscv rt_sigreturn)."""
from __future__ import annotations

import pytest

from emukern.api import Machine


def test_raw_batch_writer_round_trip(guest_asm):
    """make_batch_writer_raw writes registers from their little-endian bytes (what a signal frame
    holds); make_batch_raw reads them back the same way; a PC among them redirects the CPU."""
    from unicorn import riscv_const as UR
    m = Machine().load(guest_asm / "riscv" / "sig_loop.S", ["1"])
    cpu = m.cpu(0)
    regs = (UR.UC_RISCV_REG_PC, UR.UC_RISCV_REG_X5, UR.UC_RISCV_REG_X6, UR.UC_RISCV_REG_F3)
    vals = [0x11000, (1 << 64) - 1, 0x0123456789ABCDEF, 0x4009000000000000]
    data = b"".join(v.to_bytes(8, "little") for v in vals)
    cpu.batch_writer_raw(regs)(data)
    assert cpu.get_pc() == 0x11000 and cpu.reg(5) == (1 << 64) - 1 and cpu.reg(6) == vals[2]
    assert cpu.batch_reader_raw(regs, 8)() == data
    assert cpu.batch_reader(regs)() == vals
    assert cpu.batch_writer_raw(regs) is cpu.batch_writer_raw(regs)      # cached per CPU
    with pytest.raises(ValueError):
        cpu.batch_writer_raw(regs)(data[:-8])       # one register short: refused, not half-written
    assert cpu.batch_reader_raw(regs, 8)() == data
