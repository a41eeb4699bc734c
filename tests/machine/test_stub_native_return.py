"""The native return from a flush sequence (emukern/machine/native/a64_stub.c, issue 19).

A syscall of a TIF_SVE task runs the kernel's real ``sve_flush_live`` (or ``sve_flush_p`` at VL
128) on the CPU before the next user instruction.  With the native counter, the closing brk of
those sequences has a C code hook that returns to the user PC without the brk's exception (one
Python callback a syscall instead of two).  Everything a run reports must be what the Python
chain (the brk back into the INTR hook) gives; the stub page stays execute-only for EL0, with no
TLB flush after the stubs, because the CPU runs on Unicorn's virtual TLB with a64_stub.c's fill
hook (stub-page entries carry only the permission of the access that filled them).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import emukern.machine.cpu_arm64 as cpu_arm64
from emukern.kernel.arch.arm64.entry_fpsimd import STUBS
from emukern.machine.counter import native_available
from emukern.machine.trap import TrapKind

from tests.machine.test_sve_stub import CODE, DATA, SYSCALL_KEEPS_STATE, asm, make_cpu, queue_on_syscall

GUESTS = Path(__file__).resolve().parents[2] / "guest_asm" / "arm64"
SVE_GUESTS = ["fp_pidbench.S", "sig_sve.S", "sve_block.S", "sve_prctl.S", "sve_preempt.S", "sve_syscall.S",
              "sve_timeout.S"]
ARGV = {"fp_pidbench.S": ["300", "2"]}

needs_native = pytest.mark.skipif(not native_available(), reason="no C compiler for the native counter")


def _no_native_return(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu_arm64, "_native_stub_ret", lambda: None)


def _summary(run_guest, prog: str, **options) -> tuple[str, list, int]:
    r, m = run_guest(GUESTS / prog, argv=ARGV.get(prog, ()), **options)
    cpus = [(c.stub_insns, sorted(c.stub_stats.items()), sorted(c.stub_cycles.items()), c.insns, c.now)
            for c in m.kernel.cpus]
    returns = sum(c._ret.returns for c in m.kernel.cpus if c._ret is not None)
    return json.dumps(r.to_json(), indent=2, sort_keys=True), cpus, returns


@needs_native
@pytest.mark.parametrize("vl", [128, 512])
@pytest.mark.parametrize("prog", SVE_GUESTS)
def test_native_return_changes_nothing(run_guest, monkeypatch, prog, vl):
    """Same JSON, same per-CPU stub counts and clock, with and without the native return, with
    ticks and scheduling rounds that fall inside the flushes (as test_block_counter's runs)."""
    opts = {"sve_vl": vl, "hz": 64000, "cpus": 2, "quantum": 997, "max_insns": 1_500_000}
    native, native_cpus, returns = _summary(run_guest, prog, **opts)
    _no_native_return(monkeypatch)
    chain, chain_cpus, none = _summary(run_guest, prog, **opts)
    assert none == 0
    assert native == chain
    assert native_cpus == chain_cpus
    if prog in ("fp_pidbench.S", "sve_syscall.S"):
        assert returns > 0                  # the comparison is not vacuous


@needs_native
def test_pidbench_flushes_return_natively(run_guest):
    """fp_pidbench's TIF_SVE syscalls each run the real sve_flush_live, returned from in C."""
    r, m = run_guest(GUESTS / "fp_pidbench.S", argv=["200", "1"])
    assert r.exit_status == 0
    cpu = m.kernel.cpus[0]
    assert m.kernel.sve_stats["flush_syscall"] >= 600    # three loops of 200 with TIF_SVE
    runs = cpu.stub_stats["sve_flush_live"]
    # the syscalls' flushes returned in C, and do_sve_acc's too (the CPU writes ZEN and the VL
    # before it); one queued while the CPU is stopped goes through stub_sync ...
    assert 600 <= cpu._ret.returns <= runs <= cpu._ret.returns + 3
    assert cpu.stub_cycles["sve_flush_live"] == STUBS["sve_flush_live"][1] * runs   # ... counted whole


@needs_native
@pytest.mark.parametrize("vl", [128, 256])
def test_native_return_from_trap_hook_keeps_user_state(vl):
    """The brk never traps (no BREAKPOINT from the stub page), the user's x0-x3 and PC survive,
    and Z above 128, P and FFR are zero after the syscall."""
    code = asm(SYSCALL_KEEPS_STATE)
    cpu = make_cpu(vl, code)
    cpu.set_sve_el0(True)
    seen = []
    name = "sve_flush_live" if vl > 128 else "sve_flush_p"

    def on_trap(c, trap):
        seen.append((trap.kind, trap.pc))
        if trap.kind is TrapKind.SYSCALL:
            c.set_reg(0, 1234)
            c.queue_stub(name)
        else:
            c.stop()
    cpu.on_trap = on_trap
    cpu.run(10**6)
    assert [k for k, _ in seen] == [TrapKind.SYSCALL, TrapKind.BREAKPOINT]
    assert seen[1][1] == CODE + 4 * 13          # the user's brk #1, not the stub's
    assert cpu._ret.returns == 1
    mem = cpu.mm.read(DATA, 2048)
    vb = vl // 8
    assert mem[:vb] == bytes(range(1, 17)) + bytes(vb - 16)
    assert mem[512:512 + vl // 64] == bytes(vl // 64)
    assert [int.from_bytes(mem[256 + 8 * i:264 + 8 * i], "little") for i in range(4)] == [1234, 22, 33, 44]
    assert cpu.stub_stats[name] == 1
    assert cpu.stub_cycles[name] == STUBS[name][1]


@needs_native
def test_native_return_not_cut_by_deadline():
    """A deadline inside the flush (a tick): the flush runs whole, the run stops at the first
    user instruction after it, exactly counted."""
    code = asm("svc #0\nmov x5, #5\nmov x6, #6\nbrk #1")
    cpu = make_cpu(256, code)
    cpu.set_sve_el0(True)
    queue_on_syscall(cpu, "sve_flush_live")
    before = cpu.insns
    cpu.run(cpu.now + 3)
    assert cpu._ret.returns == 1
    assert cpu.get_pc() == CODE + 4
    assert cpu.insns - before == 1 + STUBS["sve_flush_live"][1]    # the svc, then the flush
    assert cpu.stub_stats["sve_flush_live"] == 1 and not cpu._stubs_pending()


@needs_native
def test_stub_page_unreadable_after_native_return(run_guest):
    """The flush's instruction fetches filled TLB entries for the execute-only stub page; the
    native return flushes them, so an EL0 load from the sequence just run is still a SIGSEGV."""
    addr = STUBS["sve_flush_live"][0]
    parts = [f"movz x1, #{addr & 0xFFFF}"] + [f"movk x1, #{(addr >> s) & 0xFFFF}, lsl #{s}"
                                                 for s in (16, 32, 48) if (addr >> s) & 0xFFFF]
    src = "\n".join([".globl _start", "_start:", "    rdvl x0, #8",     # TIF_SVE from here on
                     "    mov x8, #172", "    svc #0",                 # getpid: sve_flush_live
                     *("    " + p for p in parts), "    ldr x2, [x1]",
                     "    mov x0, #0", "    mov x8, #94", "    svc #0"])
    r, m = run_guest(src, arch="arm64", sve_vl=256)
    assert m.kernel.cpus[0]._ret.returns >= 1
    assert r.signal == 11, (r.stop_reason, r.message)
    assert r.fault is not None and r.fault.get("addr") == addr


@needs_native
def test_exact_counting_uses_the_chain(monkeypatch, run_guest):
    """Per-instruction counting (the debugger's) keeps the brk path: no native return."""
    monkeypatch.setenv("EMUKERN_EXACT_COUNT", "1")
    r, m = run_guest(GUESTS / "fp_pidbench.S", argv=["50", "1"])
    assert r.exit_status == 0 and m.kernel.sve_stats["flush_syscall"] > 0
    assert m.kernel.cpus[0]._ret.returns == 0


def test_stub_page_unreadable_after_chain_without_tlb_flush():
    """The brk-ended chain (two stubs queued) fetches from the stub page too; on the virtual TLB
    no flush follows it, and a user load there is still an abort.  (On Unicorn's physical TLB,
    without the flush, the same load succeeds: checked when this was written.)"""
    addr = STUBS["sve_flush_live"][0]
    parts = [f"movz x1, #{addr & 0xFFFF}"] + [f"movk x1, #{(addr >> s) & 0xFFFF}, lsl #{s}"
                                                 for s in (16, 32, 48) if (addr >> s) & 0xFFFF]
    code = asm("\n".join(["svc #0", *parts, "ldr x2, [x1]", "brk #1"]))
    cpu = make_cpu(256, code)
    cpu.set_sve_el0(True)
    assert cpu._vtlb
    seen = []

    def on_trap(c, trap):
        seen.append((trap.kind, trap.addr))
        if trap.kind is TrapKind.SYSCALL:
            c.queue_stub("sve_flush_live")
            c.queue_stub("sve_flush_p")
        else:
            c.stop()
    cpu.on_trap = on_trap
    cpu.run(10**6)
    assert seen[-1] == (TrapKind.MEM_FAULT, addr)
    assert cpu._ret.returns == 0                # (the brk path, not the native return)
    assert cpu.stub_stats["sve_flush_live"] == 1 and cpu.stub_stats["sve_flush_p"] == 1


@needs_native
@pytest.mark.parametrize("prog", ["fp_pidbench.S", "sve_block.S", "sig_sve.S", "sve_preempt.S"])
def test_trap_flush_returns_natively_and_changes_nothing(run_guest, monkeypatch, prog):
    """do_sve_acc's flush is queued from the INTR hook while CPACR_EL1.ZEN still traps; the CPU
    writes ZEN and the VL before it (as they are to be after it) and returns natively.  Under
    Linux 6.1's model every syscall drops TIF_SVE, so fp_pidbench's SVE-per-syscall loop is one
    trap (and one flush) per iteration: the run must be the chain's, byte for byte."""
    opts = {"kernel": "debian-12-arm64", "sve_vl": 512, "hz": 64000, "cpus": 2, "quantum": 997,
            "max_insns": 1_500_000}
    native, native_cpus, returns = _summary(run_guest, prog, **opts)
    _no_native_return(monkeypatch)
    chain, chain_cpus, none = _summary(run_guest, prog, **opts)
    assert none == 0
    assert native == chain
    assert native_cpus == chain_cpus
    if prog == "fp_pidbench.S":
        # no syscall flushes under 6.1: every native return is a trap's flush
        traps = json.loads(native)["traps"]["sve-access"]
        assert traps > 100 and returns == traps
