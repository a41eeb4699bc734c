"""Arm64Cpu._word: a fetch fault means "no word" (the caller reports an instruction abort);
any other error while reading the instruction is an emulator bug and must not be swallowed."""
from __future__ import annotations

import pytest

from emukern.machine.clock import Clock
from emukern.machine.cpu_arm64 import Arm64Cpu
from emukern.machine.memory import AddressSpace


@pytest.fixture
def cpu() -> Arm64Cpu:
    c = Arm64Cpu(0, Clock(), sve_vl=128)
    mm = AddressSpace()
    mm.map(0x10000, 0x1000, "r-x", "code", (0xD503201F).to_bytes(4, "little"))
    mm.map(0x20000, 0x1000, "rw-", "data")
    c.attach_mm(mm)
    return c


def test_word_reads_executable_memory(cpu):
    assert cpu._word(0x10000) == 0xD503201F


@pytest.mark.parametrize("addr", [0x20000, 0x30000, 2**64 - 2])
def test_word_is_none_on_a_fetch_fault(cpu, addr):
    assert cpu._word(addr) is None


def test_word_does_not_swallow_emulator_bugs(cpu, monkeypatch):
    def broken(addr, size=4):
        raise ZeroDivisionError("a bug in the memory model")
    monkeypatch.setattr(cpu.mm, "fetch_insn", broken)
    with pytest.raises(ZeroDivisionError):
        cpu._word(0x10000)
