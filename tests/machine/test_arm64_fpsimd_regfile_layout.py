"""The FPSIMD load and save through the register file (Arm64Cpu._fpsimd_load_regs and
_fpsimd_save_regs) batch V0-V31, FPSR and FPCR laid out as user_fpsimd_state itself: FPSR at 512
and FPCR at 516, 4 bytes each.  That relies on Unicorn reading and writing only the low 4 bytes
of either register (pinned here), and the save writes the 520 bytes at its offset of the bounce
buffer and nothing around them (a run of the save sequence leaves the rest as it was)."""
from __future__ import annotations

import ctypes
import os
from pathlib import Path

from unicorn import arm64_const as A

from emukern.api import Machine
from emukern.machine import uc_internal
from emukern.machine.cpu_arm64 import BOUNCE_BASE, StubOp

GUESTS = Path(__file__).resolve().parents[2] / "guest_asm"


def _cpu():
    return Machine(arch="arm64").load(GUESTS / "arm64/hello.S")._loaded().cpus[0]


def test_unicorn_touches_four_bytes_of_fpsr_and_fpcr():
    cpu = _cpu()
    uch = uc_internal.handle(cpu.uc)
    write, read = uc_internal.raw_fn("uc_reg_write"), uc_internal.raw_fn("uc_reg_read")
    for reg, v in ((A.UC_ARM64_REG_FPCR, 0x03C00000), (A.UC_ARM64_REG_FPSR, 0x8000001F)):
        buf = (ctypes.c_char * 8).from_buffer_copy(v.to_bytes(4, "little") + b"\xff" * 4)
        assert write(uch, reg, buf) == 0
        out = (ctypes.c_char * 8).from_buffer_copy(b"\xee" * 8)
        assert read(uch, reg, out) == 0
        assert out.raw == v.to_bytes(4, "little") + b"\xee" * 4


def _state() -> bytes:
    # V0-V31 random, FPSR with its cumulative flags and NZCV bits, FPCR with RMode/FZ/DN/AHP
    return os.urandom(512) + (0xF800009F).to_bytes(4, "little") + (0x07C00000).to_bytes(4, "little")


def test_load_then_save_round_trips_and_leaves_the_bounce_buffer_around_it():
    cpu = _cpu()
    for off in (0, 16, 520, 1000):
        state = _state()
        kbuf = bytearray(os.urandom(off)) + state + bytearray(os.urandom(40))
        cpu._fpsimd_load_regs(StubOp("fpsimd_load_state", (BOUNCE_BASE + off,), cpu.vl, buf=memoryview(kbuf),
                                     regfile_load=True))
        assert cpu.read_fpsimd_state() == state
        assert [cpu.uc.reg_read(A.UC_ARM64_REG_FPSR), cpu.uc.reg_read(A.UC_ARM64_REG_FPCR)] == [0xF800009F, 0x07C00000]
        before = bytes(cpu._bounce[:])
        out = bytearray(off + 560)
        cpu._fpsimd_save_regs(StubOp("fpsimd_save_state", (BOUNCE_BASE + off,), cpu.vl, buf=memoryview(out),
                                     regfile_save=True))
        after = bytes(cpu._bounce[:])
        assert after[off:off + 520] == state
        assert after[:off] == before[:off] and after[off + 520:] == before[off + 520:]
