"""riscv-discard=optimize-restore — "riscv: optimize Vector context restore on syscall" (Andy Chiu,
v3/v4 2026-05; patch 2 by daichengrong) — beside the seed's eager/deferred: what the guest sees
in its registers after a syscall, a blocking read and a preemption, in a signal frame's V record
and through the ptrace V regset helpers, and how many saves / restores / clobbers a vector-enabled
lat_ctx ping-pong costs under each value.

The expectations come from the model (emukern/kernel/arch/riscv/vector.py, read against the
series' cover letter, v4 2/4 and the author's public tree), not from a real kernel: no kernel with
the series applied was built.
"""
from __future__ import annotations

import itertools
import struct
from pathlib import Path

import pytest

from emukern.api import Machine, result_fields
from emukern.kernel.arch.riscv import vector as V
from emukern.machine.cpu_riscv import VS_CLEAN, VS_DIRTY, VS_INITIAL
from emukern.pytest_plugin import GUEST_ASM
from vabi_helpers import clobbered, needs_llvm, parse_snaps, pattern, run_prog, zeroed

pytestmark = needs_llvm
IMPLS = ("eager", "deferred", "optimize-restore")
KNOBS = (0, 1)
GRID = list(itertools.product(IMPLS, KNOBS))
IDS = [f"{i}-discard{d}" for i, d in GRID]
VLEN = 256
HZ = 10_000
LAT_CTX_V = Path(__file__).resolve().parent / "guests" / "lat_ctx_v.S"


def _snaps(r, n):
    assert r.exit_status == 0, (r.message, r.fault)
    s = parse_snaps(r.stdout, VLEN)
    assert len(s) == n
    return s


@pytest.mark.parametrize("impl,knob", GRID, ids=IDS)
def test_registers_after_syscalls(impl, knob):
    """Two getppid in a row, no vector write between them.  Every value shows the clobber (knob 1)
    or the registers (knob 0); optimize-restore clobbers once: the second syscall finds VS=Initial
    already and has nothing to invalidate."""
    r, m = run_prog("vabi_state.S", ["1"], VLEN, impl, knob)
    first, before, after1, after2 = _snaps(r, 4)
    assert first == zeroed(VLEN), first.short()          # first use: a zeroed context, loaded
    assert before == pattern(0x10, VLEN)
    want = clobbered(VLEN) if knob else before
    assert after1 == want and after2 == want, (after1.short(), after2.short())
    st = m.kernel.init_task.thread.v.stats
    # getppid x2, the dump (write through kernel-mode vector), exit_group
    assert st["discards"] == {"eager": 4, "deferred": 2, "optimize-restore": 2}[impl] * knob
    # deferred reloads the first-use context and, after the dump's kernel-mode vector, a Clean
    # one; optimize-restore only the first-use one (the dump left VS Initial: clobbered instead)
    assert st["restores"] == {"eager": 2, "deferred": 2, "optimize-restore": 1}[impl]
    assert st["saves"] == (1 if impl == "eager" else 0)


@pytest.mark.parametrize("impl,knob", GRID, ids=IDS)
def test_vs_after_syscall(impl, knob):
    r, m = run_prog("vabi_state.S", ["1"], VLEN, impl, knob)
    assert r.exit_status == 0
    assert m.cpu(0).vs == (VS_DIRTY if impl == "eager" else VS_INITIAL)
    # optimize-restore's exit_group found VS=Initial (the dump's return left it so): no flag set
    assert m.kernel.init_task.thread.v.defer_restore == (impl == "deferred")


@pytest.mark.parametrize("impl,knob", GRID, ids=IDS)
def test_blocking_read(impl, knob):
    """The parent sets P (0x30) and blocks in read() while the child writes Q (0x40).
    eager: the live registers (P, or the clobber) were saved at switch-out.  deferred: the stale
    context saved at an earlier preemption (P0, 0x20).  optimize-restore: the Initial state is
    never saved nor reloaded — clobbered at the return (knob 1); with the knob at 0 that clobber is
    skipped and the parent sees the *child's* registers (Q): the cross-task leak the combination
    of the series with the knob produces in this model."""
    r, m = run_prog("vabi_state.S", ["2"], VLEN, impl, knob, hz=HZ)
    p0, p, after = _snaps(r, 3)
    assert p0 == pattern(0x20, VLEN) and p == pattern(0x30, VLEN)
    expect = {("eager", 1): clobbered(VLEN), ("eager", 0): pattern(0x30, VLEN),
              ("deferred", 1): pattern(0x20, VLEN), ("deferred", 0): pattern(0x20, VLEN),
              ("optimize-restore", 1): clobbered(VLEN),
              ("optimize-restore", 0): pattern(0x40, VLEN)}[(impl, knob)]
    assert after == expect, after.short()
    st = m.kernel.init_task.thread.v.stats
    assert st["saves"] == {"eager": 3, "deferred": 1, "optimize-restore": 1}[impl]
    assert st["restores"] == {"eager": 4, "deferred": 4, "optimize-restore": 2}[impl]


@pytest.mark.parametrize("impl,knob", GRID, ids=IDS)
def test_preemption_after_syscall(impl, knob):
    """A tick preempts the task after a syscall, before any vector write (VS=Initial)."""
    r, m = run_prog("vabi_state.S", ["3"], VLEN, impl, knob, hz=HZ)
    p, after_syscall, after_preempt = _snaps(r, 3)
    assert p == pattern(0x50, VLEN)
    assert after_syscall == (clobbered(VLEN) if knob else p)
    assert m.kernel.init_task.nivcsw >= 1
    if impl == "eager":
        assert after_preempt == after_syscall          # Dirty: saved and reloaded
    elif impl == "deferred":
        assert after_preempt == zeroed(VLEN)           # stale: the first-use context
    elif knob:
        assert after_preempt == clobbered(VLEN)        # Initial across the switch: clobbered again
    else:
        # clobber skipped: what the other task left in the register file (not this task's P)
        assert after_preempt != p and after_preempt.vl == 5, after_preempt.short()


@pytest.mark.parametrize("impl", IMPLS)
def test_two_vector_processes_timer_preempted(impl):
    """Two CPU-bound vector loops preempted mid-loop: every value gives the unpreempted result
    (a Dirty context is saved and reloaded whatever the value)."""
    runs = [run_prog("vabi_loop.S", ["1000"], VLEN, impl, 1, hz=hz)[0] for hz in (100, 500_000)]
    assert all(r.exit_status == 0 for r in runs)
    assert sum(t["nivcsw"] for t in runs[1].tasks) > 0
    assert runs[0].stdout == runs[1].stdout


def _signal(impl, knob):
    m = Machine(arch="riscv64", vlen=VLEN, policies={"riscv-discard": impl},
                sysctls={"abi.riscv_v_vstate_discard": str(knob)})
    r = m.load(GUEST_ASM / "riscv" / "sig_vstate.S").run()
    assert r.exit_status == 0, (r.message, r.fault)
    keys = ("magic", "size", "vl", "vlenb", "after", "frame_v1", "sig", "info_uc", "end")
    return m, dict(zip(keys, struct.unpack("<9Q", m.read(m.symbol("res"), 72))))


@pytest.mark.parametrize("impl,knob", GRID, ids=IDS)
def test_signal_frame_v_record(impl, knob):
    """v1 = 5, then kill(self) — delivered on the syscall's return.  The frame's V record:
    eager: the live registers (saved Dirty) or the clobber; deferred: the last saved context (the
    zeroed first-use one); optimize-restore: riscv_v_ucontext_save — the nulled state (knob 1,
    all ones with vl=0) or, with the clobber skipped, the live registers (knob 0)."""
    m, res = _signal(impl, knob)
    vlenb = VLEN // 8
    expect = {("eager", 1): (0xFF, 0), ("eager", 0): (5, vlenb), ("deferred", 1): (0, 0),
              ("deferred", 0): (0, 0), ("optimize-restore", 1): (0xFF, 0),
              ("optimize-restore", 0): (5, vlenb)}[(impl, knob)]
    assert (res["frame_v1"], res["vl"]) == expect
    # sigreturn loads the record (marked Clean first under optimize-restore), not a clobber
    assert res["after"] == res["frame_v1"]


def test_sigreturn_marks_clean_under_optimize_restore():
    """The series' signal fix: without marking Clean, its set_restore would leave an Initial state
    Initial and the edited record would be clobbered at the return."""
    from emukern.kernel.arch.riscv import signal as S
    m, _ = _signal("optimize-restore", 1)
    k, cpu, task = m.kernel, m.cpu(0), m.kernel.init_task
    cpu.vs = VS_INITIAL
    V.riscv_v_vstate_set_restore(k, cpu, task)
    assert cpu.vs == VS_INITIAL and task.thread.v.defer_restore      # flag only
    src = S.__dict__["__restore_v_state"]
    st = task.thread.v
    frame = bytes(40) + (48).to_bytes(8, "little") + bytes([0x98]) * (32 * cpu.rvv.vlenb)   # datap -> +48
    ok, _note = src(k, cpu, task, 0, frame, 0)
    assert ok and cpu.vs == VS_CLEAN and st.datap[0] == 0x98


# ---- the ptrace view (the NT_RISCV_VECTOR helpers; emukern's ptrace has no V regset yet) -------
@pytest.mark.parametrize("impl,knob", GRID, ids=IDS)
def test_ptrace_view_after_syscall(impl, knob):
    """A tracee stopped after a syscall (VS as its last syscall left it, switched out).
    GETREGSET: eager shows the clobber it saved; deferred the stale saved context (Linux 6.12's
    'V state is illegal after syscall' check fails here); optimize-restore the nulled state
    (knob 1).  SETREGSET: optimize-restore drops a write to an Initial tracee."""
    r, m = run_prog("vabi_state.S", ["1"], VLEN, impl, knob)
    k, cpu, task = m.kernel, m.cpu(0), m.kernel.init_task
    st = task.thread.v
    if impl == "eager":
        # a Dirty state is saved at switch-out: do it as the switch would
        V.riscv_v_vstate_save(k, cpu, task)
    st.vs = cpu.vs
    vlenb = cpu.rvv.vlenb
    got = V.riscv_vr_get(k, task, vlenb)
    assert isinstance(got, bytes) and len(got) == V.V_REGSET_HDR + 32 * vlenb
    vstart, vl, vtype, vcsr, vl_b = struct.unpack_from("<5Q", got)
    assert vl_b == vlenb
    nulled = (vl, vtype, got[V.V_REGSET_HDR:] == b"\xff" * (32 * vlenb)) == (0, V.VTYPE_VILL, True)
    assert nulled == ((impl == "eager" and knob == 1) or (impl == "optimize-restore" and knob == 1))
    new = struct.pack("<5Q", 0, 1, 0, 0, vlenb) + bytes([0x42]) * (32 * vlenb)
    assert V.riscv_vr_set(k, task, vlenb, new) == 0
    dropped = impl == "optimize-restore"          # the tracee is Initial: the write is dropped
    assert (st.datap[0] == 0x42) == (not dropped)
    assert V.riscv_vr_set(k, task, vlenb + 1, new) == (0 if dropped else -22)


def test_ptrace_view_before_first_use():
    r, m = run_prog("hello.S", [], VLEN, "optimize-restore", 1)
    assert V.riscv_vr_get(m.kernel, m.kernel.init_task, VLEN // 8) == -V.ENODATA


# ---- lat_ctx_v: what each value saves and restores on a vector ping-pong ----------------------
def lat_ctx_counts(impl: str, knob: int, every: int, n: int = 200, vlen: int = 512) -> dict:
    m = Machine(vlen=vlen, policies={"riscv-discard": impl}, sysctls={"abi.riscv_v_vstate_discard": str(knob)})
    r = m.load(LAT_CTX_V, [str(n), str(every)]).run()
    assert r.exit_status == 0, (r.message, r.stdout)
    got = result_fields(r.stdout)
    cyc, rt = got["cycles"], got["iterations"]
    stats = [t.thread.v.stats for t in m.kernel.tasks.values()]
    out = {s: sum(x[s] for x in stats) for s in ("saves", "restores", "discards")}
    out.update(cycles_per_round_trip=cyc / rt, switches=m.kernel.percpu[0].nr_switches)
    return out


@pytest.mark.parametrize("every", (0, 1), ids=["touch-once", "touch-every-write"])
def test_lat_ctx_v_counts(every):
    """Two processes exchanging a pipe byte, both vector-enabled (200 round trips, VLEN 512,
    knob 1).  Printed with -s; the numbers are the model's."""
    res = {impl: lat_ctx_counts(impl, 1, every) for impl in IMPLS}
    for impl, c in res.items():
        print(f"lat_ctx_v {'touch-every' if every else 'touch-once'} {impl}: {c}")
    e, d, o = res["eager"], res["deferred"], res["optimize-restore"]
    assert e["switches"] == d["switches"] == o["switches"] == 401
    # eager saves every clobbered context at switch-out and reloads it at switch-in
    assert e["saves"] == 399 and e["restores"] == 401
    # deferred never saves, but its set_restore marks Clean: every switch-in reloads a stale context
    assert d["saves"] == 0 and d["restores"] == 401
    # optimize-restore: Initial stays Initial across the switch: no save, and only the two
    # first-use contexts are ever loaded; each switch-in clobbers instead
    assert o["saves"] == 0 and o["restores"] == 2
    assert o["discards"] == (800 if every else 401)
    assert o["cycles_per_round_trip"] < d["cycles_per_round_trip"] < e["cycles_per_round_trip"]


def test_runtime_switch_to_optimize_restore():
    """Runtime-switchable like the other values: the next decision follows the new value."""
    r, m = run_prog("vabi_state.S", ["1"], VLEN, "deferred", 1)
    k, cpu, task = m.kernel, m.cpu(0), m.kernel.init_task
    k.policies.set("riscv-discard", "optimize-restore")
    cpu.vs = VS_INITIAL
    task.thread.v.defer_restore = False
    assert "nothing to invalidate" in V.riscv_v_vstate_discard(k, cpu, task)
    assert not task.thread.v.defer_restore
    k.policies.set("riscv-discard", "deferred")
    V.riscv_v_vstate_discard(k, cpu, task)
    assert task.thread.v.defer_restore
