"""Quick-mode shape of the seed-004 benchmark (emukern.bench.arm64_sve)."""
from __future__ import annotations

import pytest
from rich.console import Console

from emukern.bench import arm64_sve as B

FREQ = 500_000            # one simulated second = 500k cycles: crossed within each phase


@pytest.fixture(scope="module")
def pid():
    return {(p, 128): B.fp_pidbench(p, 128, 500, 6, FREQ) for p in ("legacy", "p1+p2")}


def test_sve_bench_after_sve_syscalls_cost_more_under_legacy(pid):
    leg = pid[("legacy", 128)]
    assert leg["guest_vl"] == 128 and leg["cntfrq"] == FREQ
    assert leg["once_first"] > leg["never"] * 1.05         # the flush on every syscall
    assert leg["after_last"] > leg["never"] * 1.05          # ... for as long as the task lives
    assert leg["sve_traps"] == 1


def test_sve_bench_p1p2_returns_to_never_cost_after_timeout(pid):
    p12, leg = pid[("p1+p2", 128)], pid[("legacy", 128)]
    assert p12["once_first"] > p12["never"] * 1.05          # before the timeout it pays too
    assert p12["after_last"] == pytest.approx(p12["never"], rel=0.002)
    assert p12["drops_at_syscall"] >= 2                     # once after "used once", once after per-syscall
    s = B.summarise({**pid, ("p1", 128): pid[("legacy", 128)]}, 128)
    assert s["p2_gain_after_timeout"] > 5
    assert 0 < s["p2_overhead_per_syscall"] < 3             # one extra check (+ a trap per second)
    assert p12["per_syscall"] > leg["per_syscall"]


def test_sve_bench_blocking_retraps():
    leg = B.blocking("legacy", 120, 300, 60, FREQ)
    p1 = B.blocking("p1", 120, 300, 60, FREQ)
    a = "A (SVE bursts + blocking read)"
    c = "C (SVE once, then sleeps)"
    assert leg["tasks"][a]["retrap_pct"] > 90                 # the seed: most tasks re-trap > 50 %
    assert leg["tasks"][a]["sve_traps"] >= 100
    assert p1["tasks"][a]["sve_traps"] <= 3                   # at most about one per simulated second
    assert p1["tasks"][a]["p_flushes"] >= 100                 # ... paying a P flush per load instead
    assert leg["tasks"][c]["sve_traps"] == p1["tasks"][c]["sve_traps"] == 1
    assert leg["tasks"][c]["retrap_pct"] == 0
    assert p1["sve_trap_cycles"] < leg["sve_trap_cycles"] / 20


def test_sve_bench_module_quick(tmp_path):
    from emukern.bench.reproduce import ReproduceContext
    ctx = ReproduceContext(tmp_path, True, Console(file=open(tmp_path / "out.txt", "w"), width=200))
    res = B.run(ctx)
    assert (tmp_path / "arm64_sve.png").stat().st_size > 10_000
    assert set(res["summary"]) == {"128", "256"}
    assert res["summary"]["128"]["p2_back_to_never"] == pytest.approx(0, abs=0.2)
