"""Preemption inside syscalls (kernel/preempt.py, ``--kconfig PREEMPT=none|voluntary|full``).

A long read()/write() runs while another task is runnable and the tick is short (``hz=1e6``: a
tick every 1000 cycles, a 64 KiB copy costs tens of thousands), so ticks fall inside the copy.
What Linux does there (kernel/Kconfig.preempt, kernel/sched/core.c):

* read_iter_zero (/dev/zero) and generic_perform_write (a file) call cond_resched() after every
  page: every model switches there, and only there under none/voluntary;
* pipe_read/pipe_write have no cond_resched() inside their page loop (fs/pipe.c): under
  none/voluntary a pipe copy is never preempted, under full it is, holding pipe->mutex;
* under full, an interrupt preempts anywhere preempt_count is 0 — mid-page — and, with
  CONFIG_RISCV_ISA_V_PREEMPTIVE, inside a kernel-mode vector copy.

A preempted call continues from where it stopped when switched back in: the bytes moved and the
value returned are those of an unpreempted run.
"""
from __future__ import annotations

import itertools
import json
import shutil
import sys
from pathlib import Path

import pytest

from emukern.api import Machine
from emukern.cli import apply_kconfig, main
from emukern.config import MachineConfig
from emukern.errors import ConfigError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "riscv"))
from vabi_helpers import clobbered, machine, parse_snaps, pattern, zeroed  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("llvm-mc") is None or shutil.which("ld.lld") is None,
                                reason="llvm-mc/ld.lld not installed (needed to assemble guests)")

GUESTS = Path(__file__).resolve().parents[3] / "guest_asm" / "riscv"
PIPE, RW = GUESTS / "preempt_pipe.S", GUESTS / "preempt_rw.S"
N = 65536
DATA = bytes((7 * i + 3) & 0xFF for i in range(N))
FAST_TICK = 1_000_000          # hz: a tick every 1000 cycles at 1 GHz
MODELS = ("none", "voluntary", "full")


def run(path: Path, argv: list[str], **options) -> tuple:
    # the round-robin queue: these tests force a switch at every tick to reach the preemption
    # points (the fair class would let a task keep its 0.75 ms slice across 750 such ticks)
    m = Machine(**{"hz": FAST_TICK, "sched": "rr", **options})
    m.load(path, argv)
    r = m.run()
    assert r.exit_status == 0, (r.message, r.fault)
    assert r.warnings == {}
    return r, m


def pstats(r) -> dict:
    return r.extra.get("preempt", {"points": {}, "preemptions": {}, "kernel_ticks": 0, "where": []})


def writer(r) -> dict:
    return next(t for t in r.tasks if t["tid"] == 1)


# ---- configuration --------------------------------------------------------------------------------
def test_default_is_debians_voluntary_model(guest_asm):
    cfg = MachineConfig()
    assert cfg.preempt == "voluntary" and cfg.riscv_v_preemptive is None
    m = Machine()
    m.load(guest_asm / "riscv" / "hello.S")
    assert m.run().config["preempt"] == "voluntary"


def test_kconfig_sets_the_model_and_riscv_v_preemptive():
    cfg = MachineConfig()
    apply_kconfig(cfg, ["CONFIG_PREEMPT=full", "RISCV_ISA_V_PREEMPTIVE=n"])
    assert cfg.preempt == "full" and cfg.riscv_v_preemptive is False
    cfg.validate()
    apply_kconfig(cfg, ["PREEMPT=NONE"])
    assert cfg.preempt == "none"


@pytest.mark.parametrize("items,match", [
    (["PREEMPT=lazy"], "not a preemption model"),
    (["PREEMPT=voluntary", "RISCV_ISA_V_PREEMPTIVE=y"], "depends on PREEMPTION"),
])
def test_bad_preempt_config_is_a_clear_error(items, match):
    from emukern.kernel.boot_checks import validate_for_kernel
    cfg = MachineConfig()
    apply_kconfig(cfg, items)
    cfg.validate()                  # plain data: fine; the preemption model is the kernel's to check
    with pytest.raises(ConfigError, match=match):
        validate_for_kernel(cfg)
    with pytest.raises(ConfigError, match=match):
        Machine(cfg).load(GUESTS / "hello.S")


@pytest.mark.parametrize("options,want", [
    ({"preempt": "full"}, True), ({"preempt": "full", "riscv_v_preemptive": False}, False),
    ({"preempt": "voluntary"}, False), ({"preempt": "none"}, False)])
def test_riscv_v_preemptive_defaults_to_y_only_when_preemptible(options, want):
    from types import SimpleNamespace
    from emukern.kernel.preempt import riscv_v_preemptive
    assert riscv_v_preemptive(SimpleNamespace(config=MachineConfig(**options))) is want


def test_cli_rejects_a_bad_model(capsys, guest_asm):
    assert main(["run", str(guest_asm / "riscv" / "hello.S"), "--kconfig", "PREEMPT=sometimes"]) != 0
    err = capsys.readouterr().err
    assert "not a preemption model" in err and "Traceback" not in err


# ---- cond_resched() points: one per page ------------------------------------------------------------
@pytest.mark.parametrize("model", ("none", "voluntary"))
def test_dev_zero_read_switches_only_at_cond_resched_once_per_page(model):
    r, _ = run(RW, ["/dev/zero", "0", str(N)], preempt=model)
    st = pstats(r)
    assert r.stdout == bytes(N)                          # read(N) returned N zero bytes
    assert st["points"] == {"cond_resched": N // 4096}   # read_iter_zero: one per page
    assert st["preemptions"].get("cond_resched", 0) > 0
    assert set(st["preemptions"]) == {"cond_resched"}
    # every switch inside the call happened at a page boundary
    assert all(kind == "cond_resched" and done % 4096 == 0 for _tid, kind, done in st["where"])
    assert writer(r)["nivcsw"] >= st["preemptions"]["cond_resched"]


def test_dev_zero_read_under_full_preempts_mid_page():
    r, _ = run(RW, ["/dev/zero", "0", str(N)], preempt="full")
    st = pstats(r)
    assert r.stdout == bytes(N)
    assert st["preemptions"].get("irq", 0) > 0
    assert any(done % 4096 for _tid, kind, done in st["where"] if kind == "irq")


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("mode", ("1", "2"), ids=("write", "writev"))
def test_file_write_preempted_at_cond_resched_writes_the_same_bytes(tmp_path, model, mode):
    r, _ = run(RW, ["/out.bin", mode, str(N)], preempt=model, root=str(tmp_path), root_rw=True)
    st = pstats(r)
    assert (tmp_path / "out.bin").read_bytes() == DATA   # exit 0: write/writev returned N
    assert st["points"]["cond_resched"] == N // 4096     # generic_perform_write: one per page
    assert sum(st["preemptions"].values()) > 0
    if model != "full":
        assert set(st["preemptions"]) == {"cond_resched"}
        assert all(done % 4096 == 0 for _tid, _k, done in st["where"])


@pytest.mark.parametrize("model", MODELS)
def test_readv_of_a_file_preempted_reads_the_same_bytes(tmp_path, model):
    (tmp_path / "in.bin").write_bytes(DATA)
    r, _ = run(RW, ["/in.bin", "3", str(N)], preempt=model, root=str(tmp_path))
    assert r.stdout == DATA
    # filemap_read: cond_resched() before each batch of 31 pages: once for 16 pages
    assert pstats(r)["points"].get("cond_resched") == 1


# ---- pipes: no cond_resched inside pipe_write ---------------------------------------------------------
@pytest.mark.parametrize("threshold", (768, 0), ids=("vector-copy", "scalar-copy"))
@pytest.mark.parametrize("model", MODELS)
def test_pipe_write_is_preempted_inside_only_under_full(model, threshold):
    r, m = run(PIPE, [str(N)], preempt=model, riscv_v_ucopy_threshold=threshold)
    st = pstats(r)
    assert r.stdout == DATA                   # what the reader saw; exit 0: write returned N
    inside = sum(st["preemptions"].values())
    if model == "full":
        assert inside > 0
    else:
        assert inside == 0                    # pipe_write has no preemption point in its loop
        assert st["points"].get("irq", 0) == 0


def test_the_reader_waits_for_pipe_mutex_held_by_the_preempted_writer():
    """The reader spins only briefly, so it calls read() while the writer is switched out inside
    pipe_write holding pipe->mutex: mutex_lock puts it to sleep until the writer unlocks."""
    r, m = run(PIPE, [str(N), "2000"], preempt="full", riscv_v_ucopy_threshold=0)
    assert r.stdout == DATA
    assert any(t.tid == 2 and "blocked (pipe_lock)" in t.decision for t in m.kernel.trap_log)


def test_preempted_pipe_write_continues_not_restarts():
    r, m = run(PIPE, [str(N)], preempt="full", riscv_v_ucopy_threshold=0)
    log = list(m.kernel.trap_log)
    resumed = [t for t in log if t.tid == 1 and t.handler == "write" and "resumed" in t.decision]
    assert resumed and resumed[-1].decision.endswith(f"returned {N}")
    dones = [done for tid, _k, done in pstats(r)["where"] if tid == 1]
    assert dones == sorted(dones) and len(set(dones)) == len(dones)   # progress only moves on


# ---- the user's vector state across a preemption inside the syscall --------------------------------
def expected_v(impl: str, discard: int, vector_copy: bool, switched: bool):
    """S2 of preempt_pipe (after write(N)), vlen 256, and why (cite the Linux path).

    * eager (before "riscv: vector: treat VS_INITIAL as discard"): syscall entry clobbers (knob 1)
      or not (knob 0) and marks VS Dirty; kernel_vector_begin or __switch_to_vector's
      riscv_v_vstate_save writes that Dirty context back, and the return to user restores it:
      the same whether or not the task was switched out inside the call.
    * deferred (after it): entry leaves VS=Initial.  Never switched out and no kernel-mode vector:
      the return to user discards (knob 1: clobbered) or skips the discard (knob 0: the live
      pattern).  Switched out inside the call — at any preemption point — riscv_v_vstate_save
      saves nothing (not Dirty) and riscv_v_vstate_set_restore at switch-in marks the context
      Clean, so the return to user reloads the *last saved* context: the zeroed one first use
      allocated (the same happens after kernel_vector_begin, preempted or not)."""
    if impl == "eager":
        return clobbered(256) if discard else pattern(0x10, 256)
    if switched or vector_copy:
        return zeroed(256)
    return clobbered(256) if discard else pattern(0x10, 256)


VGRID = list(itertools.product(("eager", "deferred"), (0, 1), (768, 0),
                               (("full", True), ("full", False), ("none", None))))


@pytest.mark.parametrize("impl,discard,threshold,model", VGRID,
                         ids=[f"{i}-discard{d}-{'vec' if t else 'scalar'}-{p}{'-vpre' if v else ''}"
                              for i, d, t, (p, v) in VGRID])
def test_user_vector_state_after_a_preempted_write(impl, discard, threshold, model):
    pm, vpre = model
    m = machine(256, impl, discard, hz=FAST_TICK, sched="rr", preempt=pm, riscv_v_preemptive=vpre,
                riscv_v_ucopy_threshold=threshold)
    m.load(PIPE, [str(N)])
    r = m.run()
    assert r.exit_status == 0 and r.stdout == DATA and r.warnings == {}
    s0, s1, s2 = parse_snaps(r.stderr, 256)
    assert s0 == zeroed(256) and s1 == pattern(0x10, 256)
    if pm == "full":
        assert sum(pstats(r)["preemptions"].values()) > 0         # switched out inside write()
    assert writer(r)["nivcsw"] > 0          # (under none: at the return to user of the write)
    assert s2 == expected_v(impl, discard, threshold > 0, True), s2.short()


@pytest.mark.parametrize("impl,discard", list(itertools.product(("eager", "deferred"), (0, 1))))
def test_user_vector_state_when_never_switched_out(impl, discard):
    """The baseline: HZ=250, no tick during the run, so the writer is never switched out
    inside or after its write."""
    m = machine(256, impl, discard, preempt="full", sched="rr", riscv_v_ucopy_threshold=0)
    m.load(PIPE, [str(N)])
    r = m.run()
    assert r.exit_status == 0 and r.stdout == DATA
    # one involuntary switch: its own sched_yield (a yield leaves the task running)
    assert pstats(r)["preemptions"] == {} and writer(r)["nivcsw"] == 1
    assert parse_snaps(r.stderr, 256)[2] == expected_v(impl, discard, False, False)


# ---- CONFIG_RISCV_ISA_V_PREEMPTIVE: the kernel's own vector context --------------------------------
def _vector_reader_run(**options):
    m = machine(256, "deferred", 0, hz=FAST_TICK, sched="rr", preempt="full", **options)
    m.load(PIPE, [str(N), "40000", "1"])       # the reader spins writing v0-v31 meanwhile
    return m.run(), m


def test_preemptible_kernel_vector_region_saves_and_restores_the_kernel_context():
    r, m = _vector_reader_run()
    st = pstats(r)
    assert r.exit_status == 0 and r.stdout == DATA
    assert st["preemptions"].get("irq", 0) > 0           # inside kernel-mode vector copies
    # __switch_to_vector saved thread.kernel_vstate at each such switch-out (the region had
    # written v0: RISCV_PREEMPT_V_DIRTY) and riscv_v_context_nesting_end reloaded it
    assert st["kernel_vstate_saves"] == st["kernel_vstate_restores"] == st["preemptions"]["irq"]
    assert any("in the kernel (kernel-mode vector copy)" in t.decision for t in m.kernel.trap_log)


def test_a_non_preemptive_kernel_never_saves_a_kernel_vector_context():
    r, _ = _vector_reader_run(riscv_v_preemptive=False)
    assert pstats(r)["kernel_vstate_saves"] == 0


def test_without_the_kernel_context_restore_the_copy_would_be_corrupted(monkeypatch):
    """The save/restore is load-bearing: skip the restore of kernel_vstate (only that one) and the
    reader — which rewrote v0 while the writer was switched out between vle8ff.v and vse8.v —
    receives wrong bytes."""
    from emukern.kernel.arch.riscv import vector
    real = vector.__dict__["__riscv_v_vstate_restore"]

    def restore(k, cpu, st):
        if any(t.thread is not None and st is t.thread.v for t in k.tasks.values()):
            real(k, cpu, st)                 # a user context: as usual
    monkeypatch.setitem(vector.__dict__, "__riscv_v_vstate_restore", restore)
    r, _ = _vector_reader_run()
    assert r.exit_status == 0 and r.stdout != DATA and len(r.stdout) == N


def test_non_preemptive_region_preempts_at_its_end_under_full():
    r, _ = _vector_reader_run(riscv_v_preemptive=False)
    st = pstats(r)
    assert r.stdout == DATA
    assert st["preemptions"].get("preempt_enable", 0) > 0    # local_bh_enable ends the region
    assert all(done % 4096 == 0 for _tid, k, done in st["where"] if k == "preempt_enable")


# ---- determinism and the trace ----------------------------------------------------------------------
def test_same_inputs_same_json_twice():
    a, _ = run(PIPE, [str(N)], preempt="full")
    b, _ = run(PIPE, [str(N)], preempt="full")
    assert json.dumps(a.to_json(), sort_keys=True) == json.dumps(b.to_json(), sort_keys=True)
    assert a.to_json()["config"]["preempt"] == "full"


def test_trace_shows_preemption_inside_the_syscall(capsysbinary):
    assert main(["run", str(PIPE), str(N), "-q", "--hz", str(FAST_TICK), "--sched", "rr", "--kconfig", "PREEMPT=full",
                 "--kconfig", "RISCV_ISA_V_UCOPY_THRESHOLD=0", "--trace", "traps"]) == 0
    err = capsysbinary.readouterr().err.decode("utf-8", "replace")
    assert "preempted inside write() at irq after" in err
    assert "in the kernel (pipe_write): time slice used up: TIF_NEED_RESCHED" in err
    assert f"resumed after preemption at" in err and f"returned {N}" in err


def test_arm64_pipe_traffic_under_every_model(guest_asm):
    for model in MODELS:
        m = Machine(arch="arm64", hz=FAST_TICK, sched="rr", preempt=model)
        m.load(guest_asm / "arm64" / "lat_ctx.S", ["200"])
        r = m.run()
        assert r.exit_status == 0, (model, r.message)
        assert r.warnings == {}
