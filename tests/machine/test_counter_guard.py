"""The stub-page guard lives in the instruction counter, native and Python alike."""
from __future__ import annotations

import pytest

from emukern.machine.clock import Clock
from emukern.kernel.arch.arm64 import entry_fpsimd as EF
from emukern.kernel.arch.arm64.entry_fpsimd import STUBS
from emukern.machine.cpu_arm64 import Arm64Cpu
from emukern.machine.memory import AddressSpace
from emukern.machine.trap import TrapKind


@pytest.fixture(params=["native", "python"])
def cpu(request, monkeypatch):
    if request.param == "python":
        monkeypatch.setenv("EMUKERN_PURE_PYTHON", "1")
    c = Arm64Cpu(0, Clock(), sve_vl=128)
    EF.install(c)
    if request.param == "native" and c.counter.kind != "native":
        pytest.skip("no C compiler: the native counter is not available")
    assert c.counter.kind == request.param
    entry = STUBS["fpsimd_save_state"][0]
    code = b"".join(w.to_bytes(4, "little") for w in (
        0xD503201F, 0xD503201F,                      # nop; nop
        0xD2800000 | ((entry >> 0) & 0xFFFF) << 5,   # movz x0, #lo16
        0xF2A00000 | ((entry >> 16) & 0xFFFF) << 5,  # movk x0, #mid16, lsl 16
        0xF2C00000 | ((entry >> 32) & 0xFFFF) << 5,  # movk x0, #hi16, lsl 32
        0xD61F0000))                                 # br x0
    mm = AddressSpace()
    mm.map(0x10000, 0x1000, "r-x", "code", code)
    c.attach_mm(mm)
    c.set_pc(0x10000)
    c.enter_el0()
    return c


def test_guard_stops_user_code_in_the_stub_page_and_counts_exactly(cpu):
    seen = []

    def on_trap(c, trap):
        seen.append((trap.kind, trap.pc, trap.access))
        c.stop()
    cpu.on_trap = on_trap
    before = cpu.user_insns
    cpu.run(cpu.now + 1000)
    assert seen == [(TrapKind.MEM_FAULT, STUBS["fpsimd_save_state"][0], "x")]
    assert cpu.user_insns - before == 6          # the six user instructions; no stub one ran
    assert cpu.now >= 6
