"""The signal-time FPSIMD save through the register file (fpsimd_save_state_regs) stores exactly
what the fpsimd_save_state stub stores — V0-V31, FPSR, FPCR in the task's buffer — at every SVE
VL (V is the low 128 bits of Z), and charges the stub's instruction count as system time."""
from __future__ import annotations

import random
import types

import pytest

from emukern.kernel.arch.arm64.fpsimd import fpsimd_save_state_regs
from emukern.machine.clock import Clock
from emukern.kernel.arch.arm64 import entry_fpsimd as EF
from emukern.kernel.arch.arm64.entry_fpsimd import STUBS, SveStateArea
from emukern.machine.cpu_arm64 import Arm64Cpu
from emukern.machine.memory import AddressSpace

CODE, DATA = 0x10_0000, 0x20_0000


def make_cpu(vl: int) -> Arm64Cpu:
    cpu = Arm64Cpu(0, Clock(), sve_vl=vl)
    EF.install(cpu)
    mm = AddressSpace()
    mm.map(CODE, 0x10000, "r-x", "code")
    mm.map(DATA, 0x10000, "rw-", "data")
    cpu.attach_mm(mm)
    cpu.set_pc(CODE)
    cpu.enter_el0()
    return cpu


@pytest.mark.parametrize("vl", [128, 256, 512, 2048])
@pytest.mark.parametrize("seed", [1, 2])
def test_register_file_save_equals_the_stub(vl, seed):
    cpu = make_cpu(vl)
    a = SveStateArea(slots=8)
    r = random.Random(seed)
    st = {"z": [r.randbytes(vl // 8) for _ in range(32)], "p": [bytes(vl // 64)] * 16, "ffr": b"",
          "fpsr": 0x8000009F & r.getrandbits(32), "fpcr": r.getrandbits(2) << 22}
    EF.write_sve_state(cpu, st)
    by_stub, by_regs = a.alloc(), a.alloc()
    EF.run(cpu, "fpsimd_save_state", a, by_stub)
    k = types.SimpleNamespace(sve_area=a)
    before = cpu.sys_cycles
    fpsimd_save_state_regs(k, cpu, types.SimpleNamespace(state=by_regs))
    assert cpu.sys_cycles - before == STUBS["fpsimd_save_state"][1]
    assert a.read(by_regs + a.fp_off, 520) == a.read(by_stub + a.fp_off, 520)
    assert a.vregs(by_regs) == [int.from_bytes(z[:16], "little") for z in st["z"]]
    assert a.fpsr_fpcr(by_regs) == (st["fpsr"], st["fpcr"])
