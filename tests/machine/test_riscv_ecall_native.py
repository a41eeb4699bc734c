"""The RISC-V ecall path through the C INTR hook (counter.c's ek_rvv_intr reads the PC, a7 and
a0..a5 into its struct and calls the CPU's ecall callback, ``py_ecall``) gives exactly what the
general path gives (the CPU's own callback, _syscall_exc with its ctypes batch read): every
riscv guest runs both ways, on two CPUs with a tick period and a quantum that are multiples of
nothing, and the JSON summary and every trap record with its whole Trap must be identical.
Also: the register accessors keep the GIL and uc_emu_start does not; Policies.effective_values
follows effective() through set()."""
from __future__ import annotations

import ctypes
import json
from pathlib import Path

import pytest

from emukern.api import Machine
from emukern.machine import uc_internal
from emukern.machine.counter import native_available
from tests.machine.trap_rows import trap_rows, count_syscalls

GUESTS = Path(__file__).resolve().parents[2] / "guest_asm"
PROGRAMS = sorted(p.relative_to(GUESTS).as_posix() for p in (GUESTS / "riscv").glob("*.S"))
RUN = {"hz": 64000, "cpus": 2, "quantum": 997, "max_insns": 100_000}
ARGV = {"riscv/sig_loop.S": ["40"], "riscv/null_syscall.S": ["300", "1"]}
TRAP_FIELDS = ("kind", "pc", "cpu", "insn", "cause", "handler", "decision", "cycles", "ret", "notes", "sysregs")

needs_native = pytest.mark.skipif(not native_available(), reason="no C compiler for the native hooks")


def _run(prog: str, native_ecall: bool) -> tuple[str, list[tuple], int]:
    m = Machine(**RUN).load(GUESTS / prog, ARGV.get(prog, []))
    for cpu in m.kernel.cpus:
        if native_ecall:
            assert cpu._vc.py_ecall, "the C hook has no ecall callback"
            cb = ctypes.cast(cpu._vc.py_ecall, ctypes.c_void_p).value
            assert cb == ctypes.cast(cpu._ecall_cb, ctypes.c_void_p).value
        else:
            cpu._vc.py_ecall = None         # the CPU's general callback takes the ecall ...
            cpu._vc.ecall_no = 0            # ... and reads the registers itself
    seen = count_syscalls(m.kernel.cpus)
    r = m.run()
    traps = trap_rows(m.kernel.trap_log, TRAP_FIELDS)
    return json.dumps(r.to_json(), indent=1, sort_keys=True), traps, seen[0]


@needs_native
@pytest.mark.parametrize("prog", PROGRAMS)
def test_native_ecall_equals_the_python_register_read(prog):
    n_json, n_traps, n_calls = _run(prog, native_ecall=True)
    if prog == "riscv/syscall_loop.S":
        assert n_calls > 1000           # not vacuous
    p_json, p_traps, p_calls = _run(prog, native_ecall=False)
    assert n_calls == p_calls        # (spin, cksum, preempt_rw: none within the budget)
    assert n_json == p_json
    assert n_traps == p_traps


def test_register_accessors_keep_the_gil_and_emu_start_does_not():
    pyapi = ctypes._FUNCFLAG_PYTHONAPI      # type: ignore[attr-defined]
    assert uc_internal.raw_fn("uc_reg_write", keep_gil=True)._flags_ & pyapi
    assert not uc_internal.raw_fn("uc_emu_start")._flags_ & pyapi
    m = Machine(arch="riscv64").load(GUESTS / "riscv/hello.S")
    cpu = m.kernel.cpus[0]
    for fn in (cpu._uc_rr, cpu._uc_rw, cpu._uc_rrb, cpu._uc_rwb):
        assert fn._flags_ & pyapi


def test_effective_values_follow_set():
    m = Machine(arch="riscv64", policies={"riscv-discard": "eager"}).load(GUESTS / "riscv/hello.S")
    pol = m.kernel.policies
    assert pol.effective_values == {n: pol.effective(n) for n in pol.values}
    assert pol.effective_values["riscv-discard"] == "eager"
    pol.set("riscv-discard", "optimize-restore")
    assert pol.effective_values["riscv-discard"] == "optimize-restore" == pol.effective("riscv-discard")
