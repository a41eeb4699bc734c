"""The kernel-mode vector experiment computes its table from the runs (quick mode)."""
from pathlib import Path

from rich.console import Console

from emukern.bench import riscv_kmv
from emukern.bench.reproduce import ReproduceContext


def test_quick_run_finds_the_broken_knob_only_where_the_model_says(tmp_path: Path):
    con = Console(record=True, width=160)
    res = riscv_kmv.run(ReproduceContext(tmp_path, True, con))
    rows = {(r["policy"], r["discard"], r["threshold"]): r for r in res["rows"]}
    assert len(rows) == 8
    for (policy, discard, threshold), r in rows.items():
        assert r["kept"] + r["lost"] == res["iterations"]
        if discard:
            assert r["lost"] == res["iterations"]              # clobbered by the ABI, by design
        elif policy == "deferred" and threshold:
            assert r["lost"] == res["iterations"]              # stale context after kernel-mode vector
        else:
            assert r["lost"] == 0
        # vectorised copies are cheaper than 1 cycle/byte scalar copies at VLEN 512
    assert rows[("eager", 0, 768)]["cycles_per_iter"] < rows[("eager", 0, 0)]["cycles_per_iter"]
    assert res["knob_broken"] == [{"policy": "deferred", "threshold": 768, "lost_pct": 100.0}]
    assert (tmp_path / "riscv_kmv.png").stat().st_size > 1000
    assert "knob promise broken" in con.export_text()
