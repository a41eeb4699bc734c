"""The syscall fast path (Cpu.on_syscall -> Kernel.syscall_entry, no Trap object) gives exactly
what the generic path (a Trap through on_trap -> handle_trap -> do_syscall) gives: every guest
program in guest_asm/ runs both ways — the generic way by clearing the CPUs' ``on_syscall`` —
with a tick period and a quantum that are not multiples of anything, on two CPUs, and the JSON
summary, what `--trace traps` prints of every trap record and its whole Trap must be identical."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from emukern.api import Machine
from emukern.kernel.kernel import SyscallRecord, TrapRecord
from emukern.machine.trap import TrapKind
from emukern.report import print_trap_trace

GUESTS = Path(__file__).resolve().parents[3] / "guest_asm"
PROGRAMS = sorted(p.relative_to(GUESTS).as_posix() for arch in ("riscv", "arm64")
                  for p in (GUESTS / arch).glob("*.S"))
RUN = {"hz": 64000, "cpus": 2, "quantum": 997, "max_insns": 100_000}
ARGV = {"riscv/sig_loop.S": ["40"], "arm64/sig_loop.S": ["40"]}    # 40 signals: enough, and quick
TRAP_FIELDS = ("kind", "arch", "pc", "cpu", "insn", "insn_size", "cause", "tval", "esr", "addr", "access",
               "detail", "handler", "decision", "cycles", "ret", "notes", "sysregs")


def _run(prog: str, fast: bool) -> tuple[str, str, list[tuple], Machine]:
    m = Machine(**RUN).load(GUESTS / prog, ARGV.get(prog, []))
    if not fast:
        for cpu in m.kernel.cpus:
            cpu.on_syscall = None           # every syscall as a Trap through on_trap
    r = m.run()
    # what `--trace traps` prints of each record (report.print_trap_trace) and its whole Trap
    traps = [(rec.seq, rec.cpu, rec.tid, rec.time, rec.kind, rec.pc, rec.syndrome, rec.handler, rec.decision,
              rec.cycles, rec.tif) + tuple(getattr(rec.trap, f) for f in TRAP_FIELDS)
             for rec in m.kernel.trap_log]
    return json.dumps(r.to_json(), indent=1, sort_keys=True), traps, m


def test_the_trace_printer_reads_a_fast_record():
    m = Machine().load(GUESTS / "riscv/syscall_loop.S", ["2"])
    m.run()
    out = io.StringIO()
    print_trap_trace(m.kernel, Console(file=out, width=400, color_system=None, soft_wrap=True))
    assert "syscall    pc=0x" in out.getvalue() and "getppid: returned 0" in out.getvalue()


@pytest.mark.parametrize("prog", PROGRAMS)
def test_fast_path_equals_the_generic_path(prog):
    fast_json, fast_traps, _ = _run(prog, fast=True)
    slow_json, slow_traps, _ = _run(prog, fast=False)
    assert fast_json == slow_json
    assert fast_traps == slow_traps


@pytest.mark.parametrize("arch,sub", [("riscv64", "riscv"), ("arm64", "arm64")])
def test_syscalls_take_the_fast_path_and_records_build_their_trap_once(run_guest, arch, sub):
    """Not vacuous: on one CPU and on two (arm64's undef_lock sync gate is set), the getppid
    calls were handled without a Trap and logged as SyscallRecords."""
    for cpus in (1, 2):
        _, m = run_guest(GUESTS / sub / "syscall_loop.S", argv=["5"], cpus=cpus)
        recs = [rec for rec in m.kernel.trap_log if isinstance(rec, SyscallRecord)]
        assert len(recs) == 5                      # the loop's getppid calls (exit_group ends the task)
        rec = recs[-1]
        t = rec.trap
        assert rec.trap is t and t.kind is TrapKind.SYSCALL and t.handler == "getppid"
        assert isinstance(rec, TrapRecord) and rec.kind == "syscall" and rec.decision.startswith("returned ")
        if arch == "riscv64":
            assert t.insn == 0x73 and t.sysregs is not None and t.sysregs[0] == 173   # a7 = __NR_getppid
        else:
            assert t.insn == 0xD4000001 and t.esr == 0x56000000                      # svc #0: EC 0x15


@pytest.mark.parametrize("arch,sub", [("riscv64", "riscv"), ("arm64", "arm64")])
def test_a_trap_listener_gets_every_syscall_as_a_trap(arch, sub):
    """A listener (the debugger's way in) sees the Trap of each syscall: the generic path."""
    m = Machine(arch=arch).load(GUESTS / sub / "syscall_loop.S", ["7"])
    seen: list[str] = []
    m.kernel.trap_listeners.append(lambda when, cpu, task, trap: seen.append(f"{when} {trap.kind.value}"))
    r = m.run()
    assert r.exit_status == 0
    assert seen.count("enter syscall") == seen.count("exit syscall") >= 7 + 1
    assert not any(isinstance(rec, SyscallRecord) for rec in m.kernel.trap_log)
