"""Engines per address space (cpu_base, "engines per address space"): switch_mm picks the
engine kept for the address space instead of remapping one engine.

The machine-level test checks what the engines must get right on their own: the same address
holding other code in two address spaces, the CPU's registers going with the CPU across an
engine change, and a map change made while an engine waits (mmap and munmap of its address
space) being there when it is taken again.  The guest tests check that nothing a run records
depends on it: output and the whole --json document are the same with engines on and off, for
process and thread switches and fork loops, on one CPU and on two, and the number of engines a
fork loop makes stays bounded (engines of dead address spaces are reused).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from emukern.api import Machine
from emukern.machine.clock import Clock
from emukern.machine.cpu_arm64 import Arm64Cpu
from emukern.machine.cpu_base import Cpu
from emukern.machine.memory import AddressSpace
from emukern.machine.trap import TrapKind

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from cguests import build_cguest  # noqa: E402

CODE = 0x10000


def words(*ws: int) -> bytes:
    return b"".join(w.to_bytes(4, "little") for w in ws)


def test_kept_engine_sees_map_changes_and_registers_follow_the_cpu() -> None:
    a, b = AddressSpace(), AddressSpace()
    a.map(CODE, 0x1000, "r-x", "a", words(0xF9400260, 0xD4200020))       # ldr x0, [x19]; brk #1
    a.map(0x20000, 0x1000, "rw-", "data", (0x11).to_bytes(8, "little"))
    b.map(CODE, 0x1000, "r-x", "b", words(0xD2800040, 0xD4200020))       # movz x0, #2; brk #1
    cpu = Arm64Cpu(0, Clock(), sve_vl=128)
    traps: list[TrapKind] = []

    def on_trap(c: Cpu, trap) -> None:
        traps.append(trap.kind)
        c.stop()
    cpu.on_trap = on_trap

    def run(x19: int | None = None) -> int:
        if x19 is not None:
            cpu.set_reg(19, x19)
        cpu.set_pc(CODE)
        cpu.run(cpu.now + 1000)
        return cpu.reg(0)

    cpu.attach_mm(a)
    cpu.set_pc(CODE)
    cpu.enter_el0()
    assert run(0x20000) == 0x11
    engine_a = cpu._es.current
    cpu.attach_mm(b)
    assert cpu._es.current != engine_a
    assert run() == 2                              # the other address space's code, same address
    a.map(0x30000, 0x1000, "rw-", "late", (0x22).to_bytes(8, "little"))   # while a's engine waits
    cpu.set_reg(7, 0xDEAD)
    cpu.attach_mm(a)
    assert cpu._es.current == engine_a             # kept, not rebuilt
    assert cpu.reg(7) == 0xDEAD                    # the registers are the CPU's, not the engine's
    assert run(0x30000) == 0x22
    assert run(0x20000) == 0x11
    cpu.attach_mm(b)
    a.unmap(0x30000, 0x1000)
    cpu.attach_mm(a)
    traps.clear()
    run(0x30000)
    assert traps and traps[0] is TrapKind.MEM_FAULT # the unmapped page faults in the kept engine
    assert cpu.engine_switches == 4 and cpu.engines_made == 1


def _run(exe: Path, arch: str, argv: list[str], cpus: int, engines: bool) -> tuple[bytes, str, Machine]:
    m = Machine(arch=arch, cpus=cpus).load(exe, argv)
    for i in range(cpus):
        m.cpu(i).ENGINES_PER_MM = engines
    r = m.run()
    return r.stdout, json.dumps(r.to_json(), sort_keys=True, default=str), m


@pytest.mark.parametrize("arch", ["riscv64", "arm64"])
@pytest.mark.parametrize("mode,cpus", [("p", 1), ("t", 1), ("f", 1), ("p", 2), ("f", 2)])
def test_engines_change_no_figure(arch: str, mode: str, cpus: int) -> None:
    exe = build_cguest("pipe_pingpong", arch, "-lpthread")
    on = _run(exe, arch, [mode, "10"], cpus, True)
    off = _run(exe, arch, [mode, "10"], cpus, False)
    assert on[0] == (b"forks 10\n" if mode == "f" else b"round trips 10\n")
    assert on[:2] == off[:2]
    if mode != "t" and cpus == 1:
        assert on[2].cpu(0).engine_switches > 0


@pytest.mark.parametrize("arch", ["riscv64", "arm64"])
def test_fork_loop_engines_bounded(arch: str) -> None:
    exe = build_cguest("pipe_pingpong", arch, "-lpthread")
    *_, m = _run(exe, arch, ["f", "30"], 1, True)
    cpu = m.cpu(0)
    assert cpu.engine_switches >= 60
    assert cpu.engines_made <= Cpu.KEPT_ENGINES + Cpu.SPARE_ENGINES
    assert len(cpu._kept) < Cpu.KEPT_ENGINES and len(cpu._spare) <= Cpu.SPARE_ENGINES


def test_each_engine_keeps_its_own_block_count_cache() -> None:
    """RISC-V block counts are cached per engine (Counter.view/set_view): an engine taken again
    finds its counts, a fresh one starts empty under a generation never used before."""
    from emukern.machine.counter import native_available
    if not native_available():
        pytest.skip("the native counter is not built here")
    m = Machine(arch="riscv64", max_insns=None).load(build_cguest("pipe_pingpong", "riscv64", "-lpthread"), ["p", "1"])
    counter = m.cpu(0).counter
    mine = counter.view()
    counter.set_view(None)
    fresh = counter.view()
    assert fresh[1] is not mine[1] and fresh[0] > mine[0]
    counter.code_changed()
    assert counter.view()[0] > fresh[0] and counter.view()[1] is fresh[1]
    counter.set_view(mine)
    assert counter.view() == mine
