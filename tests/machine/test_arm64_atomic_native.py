"""The LSE atomics' alignment check in C (native/a64_stub.c's ek_a64_atomic_check, the code hook
of each atomic Unicorn performs itself; cpu_arm64.py, "LSE atomics run inside Unicorn"): it
returns for an aligned base without a Python callback, and for a misaligned one calls the CPU's
Python check, which stops before the word as it always did.  Every guest here runs with the C
check and with the Python hook (Arm64Cpu.C_ATOMIC_CHECK off), and records the same: stdout, the
--json summary, every trap record, the counts.  The asm guests also pin which cases fault (the
base register x1, x29, x30 or sp, each alignment an atomic needs), so a C check reading the wrong
register or testing the wrong alignment fails here even if the Python side were wrong the same
way."""
from __future__ import annotations

import json

import pytest

from emukern.api import Machine
from emukern.machine.counter import native_available
from emukern.machine.cpu_arm64 import Arm64Cpu, _AtomicHook
from tests.machine.trap_rows import trap_rows

needs_native = pytest.mark.skipif(not native_available(), reason="no C compiler for the native hooks")

TRAP_FIELDS = ("kind", "pc", "cpu", "insn", "esr", "handler", "decision", "cycles", "ret", "notes", "addr",
               "access", "detail")


def _run(prog, argv, c_check: bool, monkeypatch, **kw):
    """Run ``prog``; what it records, the Python check's calls and the kinds of atomic hooks."""
    monkeypatch.setattr(Arm64Cpu, "C_ATOMIC_CHECK", c_check)
    calls = [0]
    orig = Arm64Cpu._atomic_check

    def counted(self, *a):
        calls[0] += 1
        return orig(self, *a)
    monkeypatch.setattr(Arm64Cpu, "_atomic_check", counted)
    m = Machine(arch="arm64", **kw).load(prog, argv)
    r = m.run()
    k = m._loaded()
    hooks = [h for c in k.cpus for h in c._engine_rec.local_hooks.values()]
    traps = trap_rows(k.trap_log, TRAP_FIELDS, text=True)
    cpus = [(c.insns, c.now, c.traps_seen, c.exit_stops, c.stub_insns) for c in k.cpus]
    rec = (r.stdout, r.exit_status, r.signal, r.user_insns,
           json.dumps(r.to_json(), indent=1, sort_keys=True, default=str), traps, cpus)
    return rec, calls[0], hooks


def _both(prog, argv, monkeypatch, **kw):
    n, n_calls, n_hooks = _run(prog, argv, True, monkeypatch, **kw)
    p, p_calls, p_hooks = _run(prog, argv, False, monkeypatch, **kw)
    assert n == p
    assert not any(isinstance(h, _AtomicHook) for h in p_hooks)
    return n, n_calls, n_hooks, p_calls


@needs_native
def test_lse_atomics_guest_records_the_same_with_the_c_check(cguest, monkeypatch):
    """lse_atomics.c: every kind of atomic, aligned and misaligned (four SIGBUS BUS_ADRALN)."""
    prog = cguest("lse_atomics", "arm64", "-march=armv8.3-a")
    rec, n_calls, n_hooks, p_calls = _both(prog, [], monkeypatch)
    assert rec[0].count(b"BUS_ADRALN") == 4
    assert n_hooks and all(isinstance(h, _AtomicHook) for h in n_hooks)
    # the C check hands over only the misaligned ones (each stops the run once)
    assert 4 <= n_calls < p_calls


@needs_native
def test_thread_round_trips_call_no_python_check(monkeypatch):
    """The glibc thread ping-pong (emukern.bench.switch's guest): ~8 aligned atomics a round
    trip, none of them a Python callback with the C check."""
    from emukern.bench.stats import Unavailable
    from emukern.bench.switch import guest
    try:
        prog = guest("arm64")
    except Unavailable as exc:
        pytest.skip(str(exc))
    rec, n_calls, n_hooks, p_calls = _both(prog, ["t", "40"], monkeypatch, max_insns=None)
    assert rec[1] == 0
    assert n_calls == 0 and p_calls > 8 * 40
    assert n_hooks and all(isinstance(h, _AtomicHook) for h in n_hooks)


SRC = """
.include "syscalls.inc"
.arch armv8.3-a+lse
.globl _start
_start:
    sub sp, sp, #256
    mov x9, sp
    mov x10, #0x11
    stp x10, x10, [x9, #0]
    stp x10, x10, [x9, #16]
    stp x10, x10, [x9, #32]
    mov x4, #0
    mov x5, #0x11
    mov x6, #0x11
    mov x7, #0x11
    {setup}
    {insn}
    ldr x0, [x9, #{off}]
    add x0, x0, x5
    and x0, x0, #0xff
    mov x8, #SYS_exit_group
    svc #0
"""

BASES = {
    "x1": ("mov x1, x9\n    add x1, x1, #{off}", "[x1]"),
    "x29": ("mov x29, x9\n    add x29, x29, #{off}", "[x29]"),
    "x30": ("mov x30, x9\n    add x30, x30, #{off}", "[x30]"),
    "sp": ("add sp, sp, #{off}", "[sp]"),
}
# the instruction with {m} for its memory operand, and the alignment it needs
INSNS = {
    "swpb": ("swpb w4, w5, {m}", 1),
    "ldaddalh": ("ldaddalh w4, w5, {m}", 2),
    "stadd": ("stadd w4, {m}", 4),
    "ldapr": ("ldapr w5, {m}", 4),
    "ldaddal": ("ldaddal x4, x5, {m}", 8),
    "casal": ("casal x5, x6, {m}", 8),
    "caspal": ("caspal x4, x5, x6, x7, {m}", 16),
}


@needs_native
@pytest.mark.parametrize("base", sorted(BASES))
@pytest.mark.parametrize("insn", sorted(INSNS))
@pytest.mark.parametrize("off", [0, 2, 8])
def test_each_base_and_alignment(tmp_path, monkeypatch, base, insn, off):
    setup, m = BASES[base]
    text, align = INSNS[insn]
    src = tmp_path / "atomic.S"
    src.write_text(SRC.format(setup=setup.format(off=off), insn=text.format(m=m), off=off))
    rec, n_calls, n_hooks, p_calls = _both(src, [], monkeypatch)
    misaligned = off % align != 0
    if misaligned:
        assert rec[2] == 7, rec[4]          # SIGBUS, the alignment fault
        assert n_calls == p_calls == 1      # the C check handed it to Python, which stopped
    else:
        assert rec[2] is None, rec[4]
        assert n_calls == 0 and p_calls == 1
    assert len(n_hooks) == 1 and isinstance(n_hooks[0], _AtomicHook)
    assert n_hooks[0].key == (31 if base == "sp" else int(base[1:]), align)


@needs_native
def test_a_word_rewritten_into_another_atomic_gets_a_new_hook(tmp_path, monkeypatch):
    """A hook's user_data names one base register and alignment; when the scan finds another
    atomic at the same address (code rewritten), the next flush of the exits replaces it."""
    from emukern.machine.a64_atomics import Atomic
    monkeypatch.setattr(Arm64Cpu, "C_ATOMIC_CHECK", True)
    setup, m = BASES["x1"]
    src = tmp_path / "atomic.S"
    src.write_text(SRC.format(setup=setup.format(off=0), insn=INSNS["stadd"][0].format(m=m), off=0))
    mach = Machine(arch="arm64").load(src)
    mach.run()
    cpu = mach._loaded().cpus[0]
    hooks = cpu._engine_rec.local_hooks
    (pc, old), = hooks.items()
    assert old.key == (1, 4)
    cpu._atomics[pc] = Atomic("add", 8, 0, 2, 0)       # ldadd x0, x0, [x2]
    cpu._exits_dirty = True
    cpu._flush_exits()
    assert hooks[pc] is not old and hooks[pc].key == (2, 8)
    same = hooks[pc]
    cpu._exits_dirty = True
    cpu._flush_exits()
    assert hooks[pc] is same                            # unchanged: kept
