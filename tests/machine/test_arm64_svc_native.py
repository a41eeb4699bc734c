"""The arm64 svc path through the C INTR hook (native/a64_stub.c's ek_a64_intr reads the PC, x8
and x0..x5 into its struct and calls the CPU's svc callback, Arm64Cpu._svc_entry) gives exactly
what the general path gives (the same C hook calling the CPU's general callback: _hook_intr ->
_svc -> _syscall_exc with its ctypes batch read): every arm64 guest runs both ways, on two CPUs
with a tick period and a quantum that are multiples of nothing, and the JSON summary, every trap
record with its whole Trap, the per-CPU stub counts and the clock must be identical."""
from __future__ import annotations

import ctypes
import json
from pathlib import Path

import pytest

from emukern.api import Machine
from emukern.machine import regs
from emukern.machine.counter import native_available
from tests.machine.trap_rows import trap_rows, count_syscalls

GUESTS = Path(__file__).resolve().parents[2] / "guest_asm"
PROGRAMS = sorted(p.relative_to(GUESTS).as_posix() for p in (GUESTS / "arm64").glob("*.S"))
RUN = {"hz": 64000, "cpus": 2, "quantum": 997, "max_insns": 150_000}
ARGV = {"arm64/fp_pidbench.S": ["300", "2"], "arm64/syscall_loop.S": ["3000"]}
TRAP_FIELDS = ("kind", "pc", "cpu", "insn", "esr", "handler", "decision", "cycles", "ret", "notes", "sysregs")

needs_native = pytest.mark.skipif(not native_available(), reason="no C compiler for the native hooks")


def _run(prog: str, native_svc: bool) -> tuple[str, list[tuple], list[tuple], int]:
    m = Machine(arch="arm64", **RUN).load(GUESTS / prog, ARGV.get(prog, []))
    for cpu in m.kernel.cpus:
        s = cpu._svc_s
        assert s is not None and s.py_svc, "the C hook has no svc callback"
        if not native_svc:
            s.py_svc = None             # the CPU's general callback takes the svc and reads the registers
    seen = count_syscalls(m.kernel.cpus)
    r = m.run()
    traps = trap_rows(m.kernel.trap_log, TRAP_FIELDS)
    cpus = [(c.stub_insns, sorted(c.stub_stats.items()), sorted(c.stub_cycles.items()), c.insns, c.now,
             c.traps_seen) for c in m.kernel.cpus]
    return json.dumps(r.to_json(), indent=1, sort_keys=True), traps, cpus, seen[0]


@needs_native
@pytest.mark.parametrize("prog", PROGRAMS)
def test_native_svc_equals_the_python_register_read(prog):
    n_json, n_traps, n_cpus, n_calls = _run(prog, native_svc=True)
    if prog in ("arm64/syscall_loop.S", "arm64/fp_pidbench.S"):
        assert n_calls > 1000           # not vacuous
    p_json, p_traps, p_cpus, p_calls = _run(prog, native_svc=False)
    assert n_calls == p_calls
    assert n_json == p_json
    assert n_traps == p_traps
    assert n_cpus == p_cpus


@needs_native
def test_svc_hook_is_the_cpus_intr_hook():
    """The C hook took the Python callback's place: one INTR callback pair, set up once."""
    m = Machine(arch="arm64").load(GUESTS / "arm64/hello.S")
    cpu = m.kernel.cpus[0]
    s = cpu._svc_s
    assert s is not None
    assert list(s.ids) == [regs.ARM64_PC, regs.ARM64_X[8], *regs.ARM64_X[0:6]]
    cbs = [c for c in cpu._intr_cbs if isinstance(c, tuple) and len(c) == 3]
    assert len(cbs) == 1
    assert ctypes.cast(cbs[0][1], ctypes.c_void_p).value == s.py_svc
