"""reproduce's upstream fp-pidbench runs the newest stored fp-pidbench.S ("kselftest/arm64: Add a
no-SVE loop after SVE in fp-pidbench", Mark Brown): its fourth timed loop, "No SVE after SVE",
shows patch 2 of "arm64/sve: Performance improvements with SVE state saving" directly."""
from __future__ import annotations

import shutil

import pytest
from rich.console import Console

from emukern.bench import arm64_sve_upstream as U
from emukern.bench.reproduce import ReproduceContext
from emukern.selftests import pidbench as P

NEW, OLD = P.UPSTREAM_NEWEST_FIRST


def _stored(commit: str):
    from emukern.selftests.build import UPSTREAM_DIR
    f = UPSTREAM_DIR / P.UPSTREAM_NAME.format(c8=commit[:8])
    if not f.exists():
        pytest.skip(f"no stored upstream copy {f.name} (set EMUKERN_UPSTREAM_SRC)")
    return f


def test_newest_is_the_five_phase_version():
    f = _stored(NEW)
    assert P.newest_upstream() == (f, NEW)
    assert P.loops_of(f.read_text()) == (
        ("No SVE", "SVE used once", "SVE used per syscall", "No SVE after SVE"), 12)


def test_older_version_has_three_loops():
    assert P.loops_of(_stored(OLD).read_text()) == (("No SVE", "SVE used once", "SVE used per syscall"), 8)


def test_parse_loops_keeps_the_labels_apart():
    out = "Iterations per test: 8192\nNo SVE: 10\nSVE VL: 128\nSVE used once: 20\nNo SVE after SVE: 30\n"
    assert P.parse_loops(out, ("No SVE", "SVE used once", "No SVE after SVE")) == {
        "Iterations per test": 8192, "No SVE": 10, "SVE VL": 128, "SVE used once": 20, "No SVE after SVE": 30}


def _row(pol, none, after):
    return {"policy": pol, "vl": 128, "cycles_per_getpid": {"No SVE": none, U.AFTER: after}}


def test_after_sve_check_flags_a_wrong_order():
    good = U.after_sve_check([_row("legacy", 170, 189), _row("p1", 170, 189), _row("p1+p2", 170, 171)])
    assert good[0]["ok"]
    bad = U.after_sve_check([_row("legacy", 170, 189), _row("p1", 170, 189), _row("p1+p2", 170, 190)])
    assert not bad[0]["ok"]


def test_reproduce_quick_runs_the_newest_and_patch2_shows(tmp_path):
    from emukern.selftests.source import source_cache
    _stored(NEW)
    if not any(source_cache().glob("*/.emukern-unpacked")):
        pytest.skip("linux-source-6.12 is not in the cache (run `emukern selftests` once)")
    if shutil.which("aarch64-linux-gnu-gcc") is None:
        pytest.skip("aarch64-linux-gnu-gcc is not installed")
    out = tmp_path / "out.txt"
    ctx = ReproduceContext(tmp_path, True, Console(file=open(out, "w"), width=250))
    res = U.run(ctx)
    ctx.console.file.flush()
    text = out.read_text()
    # which version ran, and that its count was scaled down, are stated
    assert res["commit"] == NEW and NEW in text and P.UPSTREAM_NAME.format(c8=NEW[:8]) in text
    assert res["scaled"] and "scaled down" in text and res["real_getpid_per_loop"] == 40_960_000
    assert res["loops"] == ["No SVE", "SVE used once", "SVE used per syscall", "No SVE after SVE"]
    rows = {r["policy"]: r["cycles_per_getpid"] for r in res["runs"]}
    for r in res["runs"]:
        assert r["getpid_calls"] == 4 * res["getpid_per_loop"]
    leg, p1, p12 = rows["legacy"], rows["p1"], rows["p1+p2"]
    # legacy and p1 keep TIF_SVE after the per-syscall loop: every getpid still flushes
    assert leg[U.AFTER] > leg["No SVE"] and p1[U.AFTER] == pytest.approx(leg[U.AFTER], rel=0.01)
    # p1+p2 drops it after the 1 s sve_timeout: cheaper than legacy, close to never having used SVE
    assert p12[U.AFTER] < leg[U.AFTER]
    assert p12[U.AFTER] - p12["No SVE"] < leg[U.AFTER] - p12[U.AFTER]
    # and the loop after SVE is cheaper than the loop right after the first SVE use (a timeout
    # has passed since the last trap before its end)
    assert p12[U.AFTER] < p12["SVE used once"]
    assert all(c["ok"] for c in res["after_sve"]) and "as patch 2 predicts" in text
