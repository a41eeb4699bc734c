"""Block-level instruction counting (emukern/machine/native/counter.c) gives exactly the counts
of per-instruction counting, and the Unicorn 2.1.4 behaviour it is built on.

The equivalence test runs every assembled guest in guest_asm/ twice — block counting, then
``EMUKERN_EXACT_COUNT=1`` (a code hook before every instruction) — with a tick period and a
scheduling quantum that are not multiples of any block length, so deadlines land inside blocks
(the blocks are split), and an instruction budget; the ``--json`` summaries must be identical.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from unicorn import UC_ARCH_ARM64, UC_ARCH_RISCV, UC_HOOK_BLOCK, UC_HOOK_CODE, UC_MODE_ARM, UC_MODE_RISCV64, Uc
from unicorn.arm64_const import UC_ARM64_REG_PC, UC_ARM64_REG_X0
from unicorn.riscv_const import UC_RISCV_REG_PC

from emukern.machine.counter import NativeCounter, native_available

GUESTS = Path(__file__).resolve().parents[2] / "guest_asm"
PROGRAMS = sorted(p.relative_to(GUESTS).as_posix() for arch in ("riscv", "arm64")
                  for p in (GUESTS / arch).glob("*.S"))

needs_native = pytest.mark.skipif(not native_available(), reason="no C compiler for the native counter")

# a tick every 15625 cycles (hz 64000 at 1 GHz: odd, so ticks fall inside 2- and 4-instruction
# blocks), scheduling rounds of 997 cycles on two CPUs
RUN = {"hz": 64000, "cpus": 2, "quantum": 997, "max_insns": 1_500_000}


def _summary(run_guest, monkeypatch, prog: str, exact: bool) -> tuple[str, dict]:
    monkeypatch.setenv("EMUKERN_EXACT_COUNT", "1" if exact else "0")
    r, m = run_guest(GUESTS / prog, **RUN)
    stats: dict[str, int] = {}
    for cpu in m.kernel.cpus:
        assert cpu.counter.exact == exact
        for k, v in cpu.counter.stats().items():
            stats[k] = stats.get(k, 0) + v
    return json.dumps(r.to_json(), indent=2, sort_keys=True), stats


@needs_native
@pytest.mark.parametrize("prog", PROGRAMS)
def test_block_counts_equal_exact_counts(run_guest, monkeypatch, prog):
    blocks, _ = _summary(run_guest, monkeypatch, prog, exact=False)
    exact, _ = _summary(run_guest, monkeypatch, prog, exact=True)
    assert blocks == exact


@needs_native
def test_deadlines_do_split_blocks(run_guest, monkeypatch):
    """The equivalence above is not vacuous: runs stop inside blocks."""
    _, stats = _summary(run_guest, monkeypatch, "riscv/spin.S", exact=False)
    assert stats["splits"] > 10
    _, stats = _summary(run_guest, monkeypatch, "arm64/spin.S", exact=False)
    assert stats["splits"] > 10


# ---- Unicorn 2.1.4 facts the block counter relies on -------------------------------------------
def _arm64_loop() -> tuple[Uc, int]:
    """x0 += 1 four times per pass, forever (one 5-instruction block)."""
    uc = Uc(UC_ARCH_ARM64, UC_MODE_ARM)
    code = bytes.fromhex("00040091" * 4) + bytes.fromhex("fcffff17")   # add x0,x0,#1 x4; b .-16
    uc.mem_map(0x10000, 0x1000)
    uc.mem_write(0x10000, code)
    return uc, 0x10000


def test_emu_stop_in_block_hook_stops_before_the_block():
    uc, base = _arm64_loop()
    seen = []

    def hook(uc, address, size, _):
        seen.append((address, size))
        if len(seen) == 3:
            uc.emu_stop()
    uc.hook_add(UC_HOOK_BLOCK, hook)
    uc.emu_start(base, 0)
    assert seen[0] == (base, 20)
    assert uc.reg_read(UC_ARM64_REG_X0) == 8          # two passes; the third did not run
    assert uc.reg_read(UC_ARM64_REG_PC) == base


def test_pc_write_in_block_hook_leaves_the_block_unexecuted():
    uc, base = _arm64_loop()
    calls = []

    def hook(uc, address, size, _):
        calls.append(address)
        if len(calls) == 2:
            uc.reg_write(UC_ARM64_REG_PC, base + 8)   # resume two instructions in
        elif len(calls) == 4:
            uc.emu_stop()
    uc.hook_add(UC_HOOK_BLOCK, hook)
    uc.emu_start(base, 0)
    # pass 1: 4 adds; pass 2 quit before running; then base+8: 2 adds; then base: 4 adds
    assert calls == [base, base, base + 8, base]
    assert uc.reg_read(UC_ARM64_REG_X0) == 4 + 2


def test_hook_added_later_is_not_called_from_translated_blocks():
    uc, base = _arm64_loop()
    blocks, insns = [], []

    def bhook(uc, address, size, _):
        blocks.append(address)
        if len(blocks) == 2:
            uc.hook_add(UC_HOOK_CODE, lambda uc, a, s, _: insns.append(a))
        elif len(blocks) == 4:
            uc.emu_stop()
    uc.hook_add(UC_HOOK_BLOCK, bhook)
    uc.emu_start(base, 0)
    assert insns == []                                  # the cached block has no code hook call
    uc.ctl_flush_tb()
    blocks.clear()
    uc.emu_start(base, 0)
    assert len(insns) == 5 * 3                          # translated again: called per instruction


@needs_native
@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_native_block_counter_split_lands_on_the_deadline(arch):
    """A deadline inside a block: the run stops before exactly the right instruction."""
    if arch == "arm64":
        uc = Uc(UC_ARCH_ARM64, UC_MODE_ARM)
        code = bytes.fromhex("00040091" * 4) + bytes.fromhex("fcffff17")
        pc_reg, rvc = UC_ARM64_REG_PC, False
        sizes = [4, 4, 4, 4, 4]
    else:
        uc = Uc(UC_ARCH_RISCV, UC_MODE_RISCV64)
        # c.addi a0,1; addi a0,a0,1; c.addi a0,1; addi a0,a0,1; j .-12
        code = bytes.fromhex("0505" "13051500" "0505" "13051500" "d5bf")
        pc_reg, rvc = UC_RISCV_REG_PC, True
        sizes = [2, 4, 2, 4, 2]
    base = 0x10000
    uc.mem_map(base, 0x1000)
    uc.mem_write(base, code)
    uc.ctl_exits_enabled(True)
    uc.ctl_set_exits([])
    c = NativeCounter(uc, pc_reg, rvc, rvc, exact=False)
    offsets = [sum(sizes[:i]) for i in range(len(sizes))]
    for deadline in (1, 3, 5, 6, 12, 23):
        c.count = 0
        c.deadline = deadline
        uc.emu_start(base, 1 << 62)
        c.unsplit()
        assert c.count == deadline
        assert uc.reg_read(pc_reg) == base + offsets[deadline % 5]
    assert c.stats()["splits"] > 0


# ---- C programs (GCC + glibc: compressed RISC-V code, threads, signals, mmap) ------------------
C_PROGRAMS = ["pthreads_hello", "signals", "mmap_probe", "nproc"]
CC = {"arm64": "aarch64-linux-gnu-gcc", "riscv64": "riscv64-linux-gnu-gcc"}


@needs_native
@pytest.mark.parametrize("arch", ["riscv64", "arm64"])
@pytest.mark.parametrize("name", C_PROGRAMS)
def test_block_counts_equal_exact_counts_c(run_guest, monkeypatch, cguest, name, arch):
    elf = cguest(name, arch, "-lpthread")
    out = []
    for exact in (False, True):
        monkeypatch.setenv("EMUKERN_EXACT_COUNT", "1" if exact else "0")
        r, _m = run_guest(elf, **RUN)
        out.append(json.dumps(r.to_json(), indent=2, sort_keys=True))
    assert out[0] == out[1]


# ---- fault PCs after a hook wrote the PC ---------------------------------------------------------
@needs_native
@pytest.mark.parametrize("arch", ["riscv64", "arm64"])
@pytest.mark.parametrize("part", ["sync", "altstack", "nested"])
def test_fault_pcs_after_signal_returns_equal_both_ways(run_guest, monkeypatch, cguest, part, arch):
    """SIGSEGV/SIGBUS handled with siglongjmp, after other signals were delivered and returned
    from (each one a PC write from a hook).  Unicorn stops restoring the precise PC of a
    faulting load/store after such a write until a block is left through its exit check; the
    block counter forces that exit, so the kernel sees the same faulting PCs (and si_addr,
    frame contents, counts) as with a hook before every instruction."""
    elf = cguest("signals", arch, "-lpthread")
    out = []
    for exact in (False, True):
        monkeypatch.setenv("EMUKERN_EXACT_COUNT", "1" if exact else "0")
        r, _m = run_guest(elf, argv=[part])
        assert r.exit_status == 0, r.stdout
        out.append(json.dumps(r.to_json(), indent=2, sort_keys=True))
    assert out[0] == out[1]


# ---- traps the translator raises before a block holds the instruction --------------------------
_RV_UNIMP = """
.globl _start
_start:
  li a0, 1
  li a1, 2
  add a2, a0, a1
  .word 0
  li a7, 93
  ecall
"""


@needs_native
def test_riscv_unimp_counts_the_same_both_ways(run_guest, monkeypatch, tmp_path):
    """An all-zero halfword (c.unimp) ends the translated block before it, so no block hook
    counts it; the per-instruction hook does (it ran before the instruction was attempted), and
    the killed process reports the same user instructions either way."""
    src = tmp_path / "unimp.S"
    src.write_text(_RV_UNIMP)
    got = {}
    for exact in (True, False):
        monkeypatch.setenv("EMUKERN_EXACT_COUNT", "1" if exact else "0")
        r, _m = run_guest(src)
        got[exact] = (r.user_insns, r.exit_status)
    assert got[True] == got[False]
    assert got[True][0] == 4
