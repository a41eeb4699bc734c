"""arm64_sve's sentences are formatted from the run: feed other numbers, other sentences come out."""
from __future__ import annotations

from emukern.api import Machine
from emukern.bench import arm64_sve as B
from emukern.kernel.kernel import TRAP_LOG_LIMIT


def _pid(never: float, once: float, per: float, p12_per: float) -> dict:
    row = {"never": never, "once_first": once, "per_syscall": per}
    return {("legacy", 128): row, ("p1+p2", 128): {**row, "per_syscall": p12_per},
            ("legacy", 256): {"never": never, "once_first": once * 2, "per_syscall": per}}


def test_disagreement_lines_use_the_measured_numbers():
    summ = {128: {"overhead_after_use": 12.34, "p2_overhead_per_syscall": 0.77, "p2_back_to_never": -0.05},
            256: {"overhead_after_use": 45.6, "p2_overhead_per_syscall": 0.5, "p2_back_to_never": 0.31}}
    lines = B.disagreement(_pid(100.0, 133.3, 140.0, 142.5), summ, tif_check=7, freq=123_456)
    text = "\n".join(lines)
    assert "adds 33.3 cycles" in text and "to a 100.0-cycle getpid, 12.3 %" in text
    assert "adds 166.6 cycles, 45.6 %" in text
    assert "0.77 % over legacy (2.5 cycles per getpid)" in text and "tif_check = 7 cycles, 5.00 %" in text
    assert "123,456 cycles" in text
    assert "within 0.31 % of the never-used-SVE cost (VL 128: -0.05 %, 256: +0.31 %)" in text
    for frozen in ("~170", "~11 %", "~30 %", "~1 %", "exactly"):
        assert frozen not in text
    summ[128]["p2_back_to_never"] = summ[256]["p2_back_to_never"] = 0.0
    zero = B.disagreement(_pid(100.0, 133.3, 140.0, 142.5), summ, tif_check=7, freq=123_456)[-1]
    assert "costs what never using SVE costs (VL 128: +0.00 %, 256: +0.00 %)" in zero and "timer ticks" not in zero


def _blk(a_pct: float, c_pct: float) -> dict:
    t = {B.TASK_A: {"retrap_pct": a_pct, "fpsimd_loads_tif_sve": 10},
         B.TASK_C: {"retrap_pct": c_pct, "fpsimd_loads_tif_sve": 3}}
    return {"legacy": {"tasks": t}}


def test_retrap_claim_is_checked_and_prints_task_c():
    ok = B.retrap_summary(_blk(97.0, 1.5))
    assert ok["bimodal"] and "task A re-traps after 97.0 %" in ok["text"] and "task C after 1.5 %" in ok["text"]
    assert "the same two groups" in ok["text"]
    bad = B.retrap_summary(_blk(97.0, 66.7))
    assert not bad["bimodal"] and "NOT the published two groups" in bad["text"] and "66.7 %" in bad["text"]


def test_sve_trap_cycles_are_counted_per_kind_not_from_the_bounded_log(guest_asm):
    # fp_pidbench: one SVE trap per phase change; a run with more traps than trap_log keeps
    n = TRAP_LOG_LIMIT // 4 + 10
    m = Machine(arch="arm64")
    r = m.load(guest_asm / "arm64" / "fp_pidbench.S", [str(n), "4"]).run()
    assert r.exit_status == 0
    k = m.kernel
    assert sum(r.syscalls.values()) > TRAP_LOG_LIMIT and len(k.trap_log) == TRAP_LOG_LIMIT
    logged = sum(t.cycles for t in k.trap_log if t.kind == "syscall")
    assert k.trap_cycles["syscall"] > logged             # the log dropped the early syscalls
    # every trap's cycles are in exactly one kind
    assert sum(k.trap_cycles.values()) >= sum(t.cycles for t in k.trap_log)
    small = Machine(arch="arm64")
    small.load(guest_asm / "arm64" / "fp_pidbench.S", ["10", "2"]).run()
    sk = small.kernel
    for kind in ("syscall", "sve-access"):
        assert sk.trap_cycles[kind] == sum(t.cycles for t in sk.trap_log if t.kind == kind) > 0
