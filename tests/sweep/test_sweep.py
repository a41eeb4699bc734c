"""emukern sweep: points equal serial runs, the cache answers repeats, failures stay per point."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from emukern.cli import main as cli_main
from emukern.errors import ConfigError
from emukern.sweep.runner import LocalExecutor, run_point, run_sweep
from emukern.sweep.spec import build_spec, load_spec

REPO = Path(__file__).resolve().parents[2]
VABI = str(REPO / "guest_asm/riscv/vabi_loop.S")
SVE = str(REPO / "guest_asm/arm64/sve_syscall.S")

GRID = {"sweep": {"programs": [VABI], "args": ["40"]},
        "grid": {"vlen": [128, 512], "policy": ["riscv-discard=eager", "riscv-discard=deferred"],
                 "sysctl": ["abi.riscv_v_vstate_discard=0", "abi.riscv_v_vstate_discard=1"]}}


def serial_run(point, tmp_path: Path) -> dict:
    out = tmp_path / "serial.json"
    status = cli_main(["run", *point.argv(), "--json", str(out), "-q", point.program, "--", *point.args])
    d = json.loads(out.read_text())
    assert d["exit_status"] == status
    return d


@pytest.fixture(scope="module")
def pool_run(tmp_path_factory):
    spec = build_spec(GRID, REPO)
    cache = tmp_path_factory.mktemp("cache")
    return spec, run_sweep(spec.points, LocalExecutor(2), str(cache)), cache


def test_grid_expands_every_combination():
    spec = build_spec(GRID, REPO)
    assert len(spec.points) == 8 and spec.axes == ["vlen", "policy", "sysctl"]
    assert len({p.argv().__repr__() for p in spec.points}) == 8


def test_pool_points_equal_serial_runs(pool_run, tmp_path, capfdbinary):
    spec, run, _ = pool_run
    assert not run.failed and len(run.records) == 8
    for point, rec in zip(spec.points, run.records):
        assert rec["result"] == serial_run(point, tmp_path), point.label()
    # the swept switches really changed the runs (the sweep is not answering one point 8 times)
    assert len({r["result"]["kernel_cycles"] for r in run.records}) > 1


def test_second_sweep_is_answered_from_the_cache(pool_run):
    spec, first, cache = pool_run
    again = run_sweep(spec.points, LocalExecutor(1), str(cache))
    assert all(r["cached"] for r in again.records)
    assert [r["result"] for r in again.records] == [r["result"] for r in first.records]


def test_key_depends_on_options_and_costs(tmp_path):
    base = {"sweep": {"programs": [VABI], "args": ["5"]}, "options": {"vlen": 256}}
    keys = set()
    for extra in ({}, {"cost": "schedule=777"}, {"vlen": 512}):
        spec = build_spec({**base, "options": {**base["options"], **extra}}, REPO)
        keys.add(run_point(spec.points[0], str(tmp_path))["key"])
    assert len(keys) == 3


def test_failing_point_is_reported_and_the_rest_complete(tmp_path):
    spec = build_spec({"sweep": {"programs": [VABI], "args": ["5"]}, "grid": {"vlen": [256, 100, 128]}}, REPO)
    run = run_sweep(spec.points, LocalExecutor(2), None)
    assert [r["ok"] for r in run.records] == [True, False, True]
    assert "--vlen 100 is not supported" in run.records[1]["error"]


def test_dask_local_cluster_matches_the_pool(pool_run):
    distributed = pytest.importorskip("distributed")
    from emukern.sweep.runner import DaskExecutor
    spec, first, _ = pool_run
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        run = run_sweep(spec.points, DaskExecutor(client), None)
    assert not run.failed
    assert [r["result"] for r in run.records] == [r["result"] for r in first.records]
    assert all(not r["cached"] for r in run.records)


def test_deterministic_across_worker_counts(tmp_path):
    spec = build_spec({"sweep": {"programs": [SVE], "args": []},
                       "grid": {"policy": ["arm64-sve=legacy", "arm64-sve=p1", "arm64-sve=p1+p2"]}}, REPO)
    a = run_sweep(spec.points, LocalExecutor(1), None)
    b = run_sweep(spec.points, LocalExecutor(2), None)
    assert not a.failed
    assert [r["result"] for r in a.records] == [r["result"] for r in b.records]


@pytest.mark.parametrize("data, message", [
    ({"sweep": {}}, "names no programs"),
    ({"sweep": {"programs": [VABI]}, "grid": {"vlenn": [1]}}, "not an `emukern run` option"),
    ({"sweep": {"programs": [VABI]}, "grid": {"vlen": []}}, "non-empty list"),
    ({"sweep": {"programs": [VABI]}, "options": {"json": "x"}}, "not an `emukern run` option"),
    ({"sweep": {"programs": [VABI]}, "grd": {}}, "unknown table"),
])
def test_bad_specs_say_what_to_fix(data, message):
    with pytest.raises(ConfigError, match=message):
        build_spec(data, REPO)


def test_bad_toml_and_missing_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[sweep\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_spec(bad)
    with pytest.raises(ConfigError, match="no such sweep spec"):
        load_spec(tmp_path / "missing.toml")


def test_cli_writes_tidy_results(tmp_path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text(f'[sweep]\nprograms = ["{VABI}"]\nargs = ["5"]\n[grid]\nvlen = [128, 256, 100]\n')
    out = tmp_path / "out"
    status = cli_main(["sweep", str(spec), "--out", str(out), "--no-cache", "--workers", "2"])
    assert status == 1                      # one point failed: reported, the sweep finished
    import pandas as pd
    df = pd.read_csv(out / "results.csv")
    assert list(df["vlen"]) == [128, 256, 100] and list(df["ok"]) == [True, True, False]
    assert (df.loc[df["ok"], "traps.syscall"] > 0).all()
    assert pd.read_parquet(out / "results.parquet").shape == df.shape
    assert (out / "plot_vlen.png").stat().st_size > 1000
    assert len(list((out / "points").glob("*.json"))) == 3
    err = capsys.readouterr().err
    assert "point 2 failed" in err and "2 ran" in err


def test_no_plots_writes_the_tables_and_no_png(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(f'[sweep]\nprograms = ["{VABI}"]\nargs = ["5"]\n[grid]\nvlen = [128, 256]\n')
    out = tmp_path / "out"
    assert cli_main(["sweep", str(spec), "--out", str(out), "--no-cache", "--workers", "1", "--no-plots"]) == 0
    assert (out / "results.csv").exists() and not list(out.glob("*.png"))
