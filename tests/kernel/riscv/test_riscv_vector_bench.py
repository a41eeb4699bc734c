"""The issue-5 experiment (emukern/bench/riscv_vector.py) in quick mode: shape of its results."""
from __future__ import annotations

from rich.console import Console

from emukern.bench import riscv_vector
from emukern.bench.reproduce import ReproduceContext
from vabi_helpers import needs_llvm

pytestmark = needs_llvm


def test_quick_run_shape(tmp_path):
    ctx = ReproduceContext(tmp_path, quick=True, console=Console(file=open(tmp_path / "out.txt", "w"), width=160))
    res = riscv_vector.run(ctx)
    ns = res["null_syscall"]
    for impl in ("deferred", "eager"):
        for vlen in riscv_vector.VLENS:
            a = ns[f"{impl}/vlen{vlen}/discard0"]["cycles_per_iter"]
            b = ns[f"{impl}/vlen{vlen}/discard1"]["cycles_per_iter"]
            assert b > a > 0                                 # the clobber costs something
            assert ns[f"{impl}/vlen{vlen}/discard0"]["discards"] == 0
    lat = res["lat_ctx"]
    for vlen in riscv_vector.VLENS:
        e, d = lat[f"eager/vlen{vlen}/discard1"], lat[f"deferred/vlen{vlen}/discard1"]
        assert d["cycles_per_switch"] <= e["cycles_per_switch"]
        assert d["saves"] == 0 and e["saves"] > 0          # deferred never saves a discarded context
        assert e["nr_switches"] >= 2 * e["round_trips"]
    sweep = res["dlen_sweep_vlen512"]
    dl = sorted(sweep, key=int)
    ratios = [sweep[k]["null_discard1"] / sweep[k]["null_discard0"] for k in dl]
    assert ratios == sorted(ratios, reverse=True)          # narrower datapath: costlier clobber
    assert (tmp_path / "riscv_vector.png").stat().st_size > 10_000
    text = " ".join((tmp_path / "out.txt").read_text().split())
    # the closing comparison quotes the ratio this run measured, beside the published one
    c = res["comparison"]
    assert f"emulator x{c['null_ratio_emulator']:.3f}" in text
    assert f"emulator {c['lat_change_pct_emulator']:+.2f} % per switch" in text
    assert "seed" not in text.lower()
