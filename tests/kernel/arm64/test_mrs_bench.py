"""Seed 001 benchmark shape (emukern.bench.arm64_mrs), quickly: N up to 8 threads, small K.

Before (hook-list: every MRS walks the undef hooks under the global undef_lock) real time grows
with the number of threads; after (direct: try_emulate_mrs, lock-free) it stays flat.  No wall-time
assertions: only simulated figures, which are deterministic.
"""
from __future__ import annotations

import json

from types import SimpleNamespace

from emukern.bench import arm64_mrs as bench

THREADS = (1, 2, 4, 8)
K = 400


def test_sweep_shape_before_grows_after_flat():
    res = bench.sweep(THREADS, K, workers=1)
    assert set(res) == {(p, n) for p in bench.POLICIES for n in THREADS}
    before = [res[("hook-list", n)]["real_s"] for n in THREADS]
    after = [res[("direct", n)]["real_s"] for n in THREADS]
    g_before = before[-1] / before[0]
    g_after = after[-1] / after[0]
    assert g_after <= 1.1, after                          # direct: flat
    assert g_before >= 3.0, before                        # hook-list: the lock serialises
    assert g_before > 3 * g_after
    assert all(b2 >= b1 for b1, b2 in zip(before, before[1:]))
    # one thread: no contention; the lock path costs a little more than try_emulate_mrs
    assert 1.0 < before[0] / after[0] < 1.6
    # the lock's waiting emerges from the simulation: contended hand-offs and spinning
    lk = res[("hook-list", 8)]["lock"]
    assert lk["acquisitions"] == 8 * K
    assert lk["contended"] > 0.9 * 8 * K and lk["spin_cycles"] > 0
    assert res[("hook-list", 1)]["lock"]["contended"] == 0
    assert res[("direct", 8)]["lock"]["acquisitions"] == 0
    # system time: spinning CPUs burn kernel time
    assert res[("hook-list", 8)]["sys_s"] > 4 * res[("direct", 8)]["sys_s"]


def test_sweep_is_deterministic_across_worker_processes():
    one = bench.sweep((2,), 100, workers=1)
    two = bench.sweep((2,), 100, workers=2)
    for key in one:
        for f in ("cycles", "real_s", "sys_cycles", "lock"):
            assert one[key][f] == two[key][f], (key, f)


def test_reproduce_entry_point_quick(tmp_path, monkeypatch):
    """run(ctx) prints the table, writes the plot and returns JSON-able results."""
    from rich.console import Console
    from emukern.bench.reproduce import ReproduceContext
    monkeypatch.setattr(bench, "THREADS", (1, 2, 4))
    monkeypatch.setattr(bench, "K_QUICK", 100)
    ctx = ReproduceContext(tmp_path, True, Console(record=True, width=120))
    out = bench.run(ctx)
    assert (tmp_path / "arm64_mrs.png").stat().st_size > 0
    assert out["k"] == 100 and len(out["rows"]) == 3
    text = ctx.console.export_text()
    # the 4-thread row shows our measured figure (scaled to 1e6 reads) beside the published one
    b4 = out["rows"][2]["before"]
    assert f"{b4['real_s'] * bench.SEED_K / 100:.2f} / {bench.SEED_REAL['hook-list'][4]:.2f}" in text
    json.dumps(out)                                       # JSON-able, as reproduce writes it
    assert out["growth_before"] > 2 and out["growth_after"] < 1.1
