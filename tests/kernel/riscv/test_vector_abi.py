"""The user-visible RISC-V vector ABI across first use, syscalls, blocking and preemption, for
both implementations of syscall-entry discard (seed 003: eager = before, deferred = after) and both
values of abi.riscv_v_vstate_discard (seed 000), at three VLENs.

Reference: arch/riscv/include/asm/vector.h (riscv_v_vstate_discard/save/restore/set_restore),
arch/riscv/kernel/vector.c (riscv_v_first_use_handler), Documentation/arch/riscv/vector.rst.
"""
from __future__ import annotations

import itertools

import pytest

from emukern.kernel.arch.riscv.vector import VState
from emukern.machine.cpu_riscv import VS_CLEAN, VS_DIRTY, VS_INITIAL
from vabi_helpers import (DISCARDS, IMPLS, VLENS, clobbered, needs_llvm, parse_snaps, pattern,
                          run_prog, zeroed)

pytestmark = needs_llvm
GRID = list(itertools.product(DISCARDS, IMPLS, VLENS))
IDS = [f"discard{d}-{i}-vlen{v}" for d, i, v in GRID]
HZ = 10_000          # a tick every 100k cycles: the spin loops in vabi_state span several


def _snaps(r, vlen, n):
    assert r.exit_status == 0, (r.message, r.fault)
    s = parse_snaps(r.stdout, vlen)
    assert len(s) == n
    return s


@pytest.mark.parametrize("discard,impl,vlen", GRID, ids=IDS)
def test_first_use_and_syscalls(discard, impl, vlen):
    r, m = run_prog("vabi_state.S", ["1"], vlen, impl, discard)
    first, before, after1, after2 = _snaps(r, vlen, 4)
    # first use: riscv_v_first_use_handler allocates a zeroed context and arranges a restore,
    # so the trapping csrr re-executes on zeroed registers with vl=0 and vtype=0 (not vill)
    assert first == zeroed(vlen), first.short()
    assert before == pattern(0x10, vlen)
    if discard:
        # v0-v31 all ones, vl=0, vtype.vill after every syscall (eager: at entry; deferred: on
        # the way out because VS=Initial)
        assert after1 == clobbered(vlen), after1.short()
        assert after2 == clobbered(vlen), after2.short()
    else:
        assert after1 == before and after2 == before
    init = m.kernel.init_task
    st: VState = init.thread.v
    assert st.stats["first_use"] == 1
    # one task, never switched out; but the dump is a write() above the usercopy threshold, so
    # it goes through kernel-mode vector: kernel_vector_begin saves the context if it is Dirty
    # (eager leaves it Dirty at syscall entry; deferred leaves it Initial: nothing to save)
    assert st.stats["saves"] == (1 if impl == "eager" else 0)
    # syscalls getppid, getppid, write (the dump), exit_group: eager clobbers at each entry
    # (4); deferred clobbers on the way out of the two getppid only: the dump's kernel-mode
    # vector marked the context Clean (restore, not discard), and exit_group never returns (2)
    assert st.stats["discards"] == ((4 if impl == "eager" else 2) if discard else 0)
    # exactly one first-use trap, no SIGILL
    assert r.traps.get("illegal", 0) >= 1 and r.fault is None


@pytest.mark.parametrize("discard,impl", list(itertools.product(DISCARDS, IMPLS)))
def test_vs_after_syscall(discard, impl):
    """sstatus.VS the task returns to user with: eager marks Dirty at entry; deferred leaves
    Initial (riscv_v_vstate_on) — the knob only decides whether registers are clobbered."""
    r, m = run_prog("vabi_state.S", ["1"], 256, impl, discard)
    assert r.exit_status == 0
    # the last kernel entry was exit_group, which never returns: cpu.vs is what its entry left
    assert m.cpu(0).vs == (VS_DIRTY if impl == "eager" else VS_INITIAL)
    assert m.kernel.init_task.thread.v.defer_restore == (impl == "deferred")


@pytest.mark.parametrize("discard,impl,vlen", GRID, ids=IDS)
def test_blocking_syscall_restores_stale_context_when_deferred(discard, impl, vlen):
    """A task blocks in read() on an empty pipe while another task uses the vector unit.

    Parent: P0 (0x20) then a scalar spin during which a timer tick preempts it with VS=Dirty,
    so P0 is saved to its context; later it sets P (0x30) and blocks in read().  The child's
    first use and its pattern Q (0x40) overwrite the physical registers before it wakes the parent.

    * eager (before seed 003): syscall entry clobbers (knob 1) or not (knob 0) and marks Dirty,
      so switch-out saves what is live -> the parent sees all ones/vill (knob 1) or exactly P
      (knob 0).
    * deferred (after seed 003): entry only sets TIF_RISCV_V_DEFER_RESTORE and VS=Initial, so
      switch-out saves nothing; switch-in (riscv_v_vstate_set_restore) marks Clean, and the
      return-to-user restore loads the context from memory — the *stale* P0 saved at the earlier
      preemption, whatever the knob says.  With knob 1 that is ABI-legal (vector registers are
      unspecified after a syscall) but no longer the all-ones clobber; with knob 0 it breaks
      the knob's promise that vector state is not discarded across syscalls.
    """
    r, m = run_prog("vabi_state.S", ["2"], vlen, impl, discard, hz=HZ)
    p0, p, after = _snaps(r, vlen, 3)
    assert p0 == pattern(0x20, vlen) and p == pattern(0x30, vlen)
    parent = m.kernel.init_task
    assert parent.nivcsw >= 1, "the spin loop must have been preempted by a tick (P0 saved)"
    assert parent.nvcsw >= 1, "the read must have blocked"
    if impl == "eager":
        expect = clobbered(vlen) if discard else pattern(0x30, vlen)
    else:
        expect = pattern(0x20, vlen)        # stale: the last context actually saved
    assert after == expect, after.short()
    st = parent.thread.v
    if impl == "deferred":
        assert st.stats["saves"] == 1       # only the timer preemption saved anything
    else:
        assert st.stats["saves"] >= 2       # the preemption and the blocking read


@pytest.mark.parametrize("discard,impl,vlen", GRID, ids=IDS)
def test_preemption_after_syscall_before_vector_write(discard, impl, vlen):
    """Timer preemption while VS=Initial (after a syscall, before any vector write).

    eager: the syscall marked Dirty, so the preemption saves the live registers and the task
    gets them back.  deferred: VS=Initial is never saved; switch-in marks Clean and restores
    the old context from memory — here the zeroed first-use context, because nothing was ever
    saved.  So with deferred discard the task loses P even with the knob at 0 (and sees zeros,
    not all ones, with the knob at 1).
    """
    r, m = run_prog("vabi_state.S", ["3"], vlen, impl, discard, hz=HZ)
    p, after_syscall, after_preempt = _snaps(r, vlen, 3)
    assert p == pattern(0x50, vlen)
    assert after_syscall == (clobbered(vlen) if discard else p)
    assert m.kernel.init_task.nivcsw >= 1
    if impl == "eager":
        assert after_preempt == after_syscall
    else:
        assert after_preempt == zeroed(vlen), after_preempt.short()


def _loop_expect(vlen: int, seed: int, iters: int) -> tuple[list[int], list[int]]:
    n = vlen // 32
    v1 = [(i + seed) & 0xFFFFFFFF for i in range(n)]
    v2 = [0] * n
    for _ in range(iters):
        v2 = [(a + b) & 0xFFFFFFFF for a, b in zip(v2, v1)]
        v1 = [(a * 3 + 1) & 0xFFFFFFFF for a in v1]
    return v1, v2


def _e32(regs: bytes, reg: int, vlen: int) -> list[int]:
    vlenb = vlen // 8
    b = regs[reg * vlenb: (reg + 1) * vlenb]
    return [int.from_bytes(b[i: i + 4], "little") for i in range(0, vlenb, 4)]


LOOP_ITERS = 1000


@pytest.mark.parametrize("discard,impl,vlen", GRID, ids=IDS)
def test_timer_preemption_in_vector_loop(discard, impl, vlen):
    """Two CPU-bound processes on one CPU, a tick every 2000 cycles: the vector loop is preempted
    many times in the middle; results equal the unpreempted computation, bit for bit."""
    r, m = run_prog("vabi_loop.S", [str(LOOP_ITERS)], vlen, impl, discard, hz=500_000)
    assert r.exit_status == 0, r.message
    child, parent = parse_snaps(r.stdout, vlen)
    assert all(t["nivcsw"] >= 2 for t in r.tasks), r.tasks
    for snap, seed in ((parent, 0), (child, 1000)):
        v1, v2 = _loop_expect(vlen, seed, LOOP_ITERS)
        assert snap.vl == vlen // 32 and snap.vtype == 0xD0     # e32, m1, ta, ma
        assert _e32(snap.regs, 1, vlen) == v1
        assert _e32(snap.regs, 2, vlen) == v2


@pytest.mark.parametrize("vlen", VLENS)
def test_timer_preemption_equals_unpreempted_run(vlen):
    runs = {}
    for hz in (100, 500_000):
        r, _ = run_prog("vabi_loop.S", [str(LOOP_ITERS)], vlen, "deferred", 1, hz=hz)
        assert r.exit_status == 0
        runs[hz] = r
    assert sum(t["nivcsw"] for t in runs[100].tasks) == 0
    assert sum(t["nivcsw"] for t in runs[500_000].tasks) > 0
    assert runs[100].stdout == runs[500_000].stdout


@pytest.mark.parametrize("impl", IMPLS)
def test_deterministic(impl):
    def once():
        r, m = run_prog("vabi_state.S", ["2"], 512, impl, 1, hz=HZ)
        return (r.cycles, r.user_insns, r.kernel_cycles, r.traps, r.syscalls, r.stdout,
                [(t["tid"], t["utime"], t["stime"], t["nvcsw"], t["nivcsw"]) for t in r.tasks],
                tuple(c.now for c in m.kernel.cpus))
    assert once() == once()


def test_vs_bookkeeping_deferred_knob_off():
    """Linux checks the knob inside __riscv_v_vstate_discard, so with the knob at 0 the deferred
    path still sets TIF_RISCV_V_DEFER_RESTORE and VS=Initial at syscall entry."""
    from emukern.kernel.arch.riscv import vector as V
    r, m = run_prog("vabi_state.S", ["1"], 128, "deferred", 0)
    k, cpu, task = m.kernel, m.cpu(0), m.kernel.init_task
    cpu.vs = VS_DIRTY
    V.riscv_v_vstate_discard(k, cpu, task)
    assert cpu.vs == VS_INITIAL and task.thread.v.defer_restore
    before = bytes(cpu.rvv.v)
    assert "skipped" in V.riscv_v_vstate_restore(k, cpu, task)
    assert bytes(cpu.rvv.v) == before and cpu.vs == VS_INITIAL
    # set_restore after seed 003 marks Clean (a real context is reloaded, not discarded)
    V.riscv_v_vstate_set_restore(k, cpu, task)
    assert cpu.vs == VS_CLEAN
