"""`emukern reproduce` bookkeeping: runs kept apart or merged, quick/partial marked, Ctrl-C keeps
the finished experiments, the closing table built from the bench modules' constants."""
from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from emukern.bench import arm64_mrs, reproduce as R, riscv_vector


def _fake(name: str, behaviour: dict[str, str]) -> types.ModuleType:
    mod = types.ModuleType(f"emukern.bench.{name}")
    mod.TITLE = f"fake {name}"

    def run(ctx):
        what = behaviour.get(name, "ok")
        if what == "interrupt":
            raise KeyboardInterrupt
        if what == "fail":
            raise RuntimeError("boom")
        (ctx.out_dir / f"{name}.png").write_bytes(b"png " + what.encode())
        return {"value": what, "quick": ctx.quick}
    mod.run = run
    return mod


@pytest.fixture
def fakes(monkeypatch):
    behaviour: dict[str, str] = {}
    names = ["fa", "fb", "fc"]
    for n in names:
        monkeypatch.setitem(sys.modules, f"emukern.bench.{n}", _fake(n, behaviour))
    monkeypatch.setattr(R, "EXPERIMENTS", names)
    monkeypatch.setattr(R, "PNGS", {n: f"{n}.png" for n in names})
    return behaviour


def _res(d: Path) -> dict:
    return json.loads((d / "results.json").read_text())


def test_only_merges_and_keeps_the_other_experiments(tmp_path, fakes):
    fakes.update(fa="first", fb="first", fc="first")
    assert R.reproduce(tmp_path) == 0
    fakes.update(fb="second")
    assert R.reproduce(tmp_path, only=["fb"]) == 0
    r = _res(tmp_path)
    assert r["fa"]["value"] == "first" and r["fb"]["value"] == "second" and r["fc"]["value"] == "first"
    assert r["runs"]["fa"] == {"status": "ok", "quick": False, "run": 1}
    assert r["runs"]["fb"] == {"status": "ok", "quick": False, "run": 2}
    assert r["partial"] is False
    assert (tmp_path / "fa.png").read_bytes() == b"png first"       # still matches fa's entry
    assert (tmp_path / "fb.png").read_bytes() == b"png second"


def test_quick_runs_are_kept_apart_and_marked(tmp_path, fakes):
    fakes.update(fa="full", fb="full", fc="full")
    assert R.reproduce(tmp_path) == 0
    fakes.update(fa="quick")
    assert R.reproduce(tmp_path, quick=True, only=["fa"]) == 0
    assert _res(tmp_path)["fa"]["value"] == "full" and (tmp_path / "fa.png").read_bytes() == b"png full"
    q = _res(tmp_path / "quick")
    assert q["quick"] is True and q["fa"]["quick"] is True
    assert q["partial"] is True                        # fb and fc never ran in quick mode
    assert set(q["runs"]) == {"fa"}


def test_ctrl_c_writes_the_finished_experiments(tmp_path, fakes, capsys):
    fakes.update(fa="done", fb="interrupt")
    assert R.reproduce(tmp_path) == 130
    r = _res(tmp_path)
    assert r["fa"]["value"] == "done" and "fb" not in r and "fc" not in r
    assert r["runs"]["fb"]["status"] == "interrupted" and "fc" not in r["runs"]
    assert r["partial"] is True
    assert "interrupted" in capsys.readouterr().out


def test_a_failed_rerun_removes_the_stale_entry_and_png(tmp_path, fakes):
    fakes.update(fa="old")
    assert R.reproduce(tmp_path, only=["fa"]) == 0
    fakes.update(fa="fail")
    assert R.reproduce(tmp_path, only=["fa"]) == 1
    r = _res(tmp_path)
    assert "fa" not in r and r["runs"]["fa"]["status"] == "failed" and not (tmp_path / "fa.png").exists()


def test_unknown_experiment_is_a_usage_error(tmp_path, fakes):
    assert R.reproduce(tmp_path, only=["nope"]) == 2
    assert not (tmp_path / "results.json").exists()


def test_summary_uses_the_modules_constants_and_marks_misses(monkeypatch):
    monkeypatch.setitem(riscv_vector.SEED_NULL, 0, 100.0)
    monkeypatch.setitem(riscv_vector.SEED_NULL, 1, 150.0)
    r = {"riscv_vector": {"comparison": {"null_ratio_emulator": 1.2, "lat_change_pct_emulator": -7.0}},
         "arm64_mrs": {"growth_before": 12.0, "growth_after": 1.1, "target_before_ok": False,
                       "target_after_ok": True}}
    rows = {row[1]: row for row in R.summary_rows(r)}
    null = rows["null_syscall cost, discard 0 -> 1 (VLEN 512, DLEN = VLEN)"]
    assert null[0].startswith("riscv: Add sysctl to control discard of vstate during syscall (Drew Fustini")
    assert null[2] == "x1.200" and null[3] == "x1.500 (X280: 100.0 -> 150.0 ns)"
    top = max(arm64_mrs.THREADS)
    before = rows[f"real time 1 -> {top} threads, hook-list (before)"]
    assert before[2] == "x12.0 MISSED"
    assert rows[f"real time 1 -> {top} threads, try_emulate_mrs (after)"][2] == "x1.10"
    assert not any("seed" in c.lower() for row in rows.values() for c in row)


@pytest.fixture
def real_sigint():
    """A real SIGINT raises KeyboardInterrupt in the main thread (as Ctrl-C does), whatever the
    test runner set up."""
    import signal
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


def _reproduce_interrupted(tmp_path: Path, jobs: int, after: float = 3.0) -> None:
    """reproduce(--jobs jobs) with a real SIGINT ``after`` seconds in: it exits 130, promptly."""
    import os
    import signal
    import threading
    import time
    timer = threading.Timer(after, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    t = time.perf_counter()
    assert R.reproduce(tmp_path, jobs=jobs) == 130
    timer.cancel()
    assert time.perf_counter() - t < 20


def test_real_sigint_during_an_experiment(tmp_path, fakes, monkeypatch, real_sigint):
    import os
    import signal
    import time

    def slow(ctx):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(30)                      # interrupted long before this ends
        return {"value": "never"}
    monkeypatch.setattr(sys.modules["emukern.bench.fb"], "run", slow)
    t = time.perf_counter()
    assert R.reproduce(tmp_path) == 130
    assert time.perf_counter() - t < 20
    r = _res(tmp_path)
    assert r["fa"]["value"] == "ok" and r["runs"]["fb"]["status"] == "interrupted" and "fc" not in r["runs"]


def test_sigint_stops_the_mrs_worker_pool_at_once(real_sigint):
    import os
    import signal
    import threading
    import time
    from emukern.bench import arm64_mrs
    timer = threading.Timer(2.0, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    t = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        arm64_mrs.sweep((64, 32, 16, 8), 20_000, workers=2)      # minutes of work if not stopped
    took = time.perf_counter() - t
    timer.cancel()
    assert took < 20, took


# ---- the experiments in a process pool (--jobs N) ------------------------------------------------

@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_pooled_run_gives_the_serial_results_in_order(tmp_path, fakes, capsys, jobs):
    fakes.update(fa="a", fb="b", fc="c")
    assert R.reproduce(tmp_path, jobs=jobs) == 0
    r = _res(tmp_path)
    assert [r[n]["value"] for n in ("fa", "fb", "fc")] == ["a", "b", "c"]
    assert all(r["runs"][n]["status"] == "ok" for n in ("fa", "fb", "fc")) and r["partial"] is False
    assert (tmp_path / "fb.png").read_bytes() == b"png b"          # written by the worker
    out = capsys.readouterr().out
    # each experiment's output appears whole and in EXPERIMENTS order, whatever finished first
    assert out.index("fake fa") < out.index("fake fb") < out.index("fake fc")
    if jobs > 1:
        assert "worker processes" in out


def test_pooled_failure_is_reported_and_the_others_finish(tmp_path, fakes, capsys):
    fakes.update(fa="x", fb="fail", fc="z")
    assert R.reproduce(tmp_path, jobs=2) == 1
    r = _res(tmp_path)
    assert r["fa"]["value"] == "x" and r["fc"]["value"] == "z" and "fb" not in r
    assert r["runs"]["fb"]["status"] == "failed"
    out = capsys.readouterr().out
    assert "fb failed: RuntimeError: boom" in out


def test_timing_experiments_run_alone_outside_the_pool(tmp_path, fakes, monkeypatch):
    """A host-speed benchmark never shares the machine with a pooled experiment: it runs in the
    main process (same pid), after the pool has finished (the reproduction leads the output)."""
    import os
    seen: dict[str, int] = {}
    for n in ("fa", "fb", "fc"):
        mod = sys.modules[f"emukern.bench.{n}"]

        def run(ctx, n=n):
            seen[n] = os.getpid()
            (ctx.out_dir / f"{n}.pid").write_text(str(os.getpid()))
            return {"value": n}
        monkeypatch.setattr(mod, "run", run)
    monkeypatch.setattr(R, "TIMING", ("fb",))
    assert R.reproduce(tmp_path, jobs=2) == 0
    pids = {n: int((tmp_path / f"{n}.pid").read_text()) for n in ("fa", "fb", "fc")}
    assert pids["fb"] == os.getpid()
    assert pids["fa"] != os.getpid() and pids["fc"] != os.getpid()


def test_jobs_option_rejects_nonsense(capsys):
    from emukern.cli import main
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "--jobs", "0"])
    assert e.value.code == 2
    assert "less than 1" in capsys.readouterr().err


def test_ctrl_c_stops_the_pool_and_keeps_what_finished(tmp_path, fakes, monkeypatch, real_sigint):
    import time

    def slow(ctx):
        time.sleep(60)                      # stopped long before this ends
        return {"value": "never"}
    monkeypatch.setattr(sys.modules["emukern.bench.fb"], "run", slow)
    fakes.update(fa="done", fc="done")
    _reproduce_interrupted(tmp_path, jobs=3)
    r = _res(tmp_path)
    assert r["fa"]["value"] == "done" and r["fc"]["value"] == "done"
    assert r["runs"]["fb"]["status"] == "interrupted" and r["partial"] is True


# ---- experiments made of points (arm64_mrs): each point one task of the same pool ----------------

def _pointed(behaviour: dict[str, str]) -> types.ModuleType:
    """A stand-in experiment with three points (costs 1, 5, 3) whose run() sums their results."""
    mod = types.ModuleType("emukern.bench.fp")
    mod.TITLE = "fake fp"
    mod.pool_points = lambda ctx: [("p", 1), ("p", 5), ("p", 3)]
    mod.point_cost = lambda pt: float(pt[1])

    def run_point(pt):
        what = behaviour.get(f"fp{pt[1]}", "ok")
        if what == "fail":
            raise ValueError(f"point {pt[1]} broke")
        if what == "sleep":
            import time
            time.sleep(60)
        return {"point": pt[1], "pid": __import__("os").getpid()}
    mod.run_point = run_point

    def run(ctx):
        pts = ctx.points if ctx.points is not None else [(pt, run_point(pt)) for pt in mod.pool_points(ctx)]
        ctx.console.print(f"fp points {[r['point'] for _pt, r in pts]}")
        return {"sum": sum(r["point"] for _pt, r in pts), "pooled": ctx.points is not None,
                "order": [pt[1] for pt, _r in pts]}
    mod.run = run
    return mod


@pytest.fixture
def pointed(monkeypatch, fakes):
    monkeypatch.setitem(sys.modules, "emukern.bench.fp", _pointed(fakes))
    monkeypatch.setattr(R, "EXPERIMENTS", ["fa", "fp", "fb"])
    return fakes


@pytest.mark.parametrize("fa_cost, order", [
    # fp's points (5 + 3 + 1 = 9 s) are tasks of their own, kept together, longest point first;
    # the experiments go by their total: fb 10, fp 9, fa 4 ...
    (4.0, [("fb", None), ("fp", 1), ("fp", 2), ("fp", 0), ("fa", None)]),
    # ... and fa 9.5 before fp 9, even though fp's longest point (5) is shorter than neither
    (9.5, [("fb", None), ("fa", None), ("fp", 1), ("fp", 2), ("fp", 0)]),
])
def test_plan_keeps_an_experiments_points_together_longest_experiment_first(tmp_path, pointed, monkeypatch,
                                                                              fa_cost, order):
    monkeypatch.setattr(sys.modules["emukern.bench.fa"], "POOL_SECONDS", fa_cost, raising=False)
    ctx = R.ReproduceContext(tmp_path, False, R.FitConsole(), jobs=2)
    tasks, points = R._plan(["fa", "fp", "fb"], ctx)
    assert points == {"fp": [("p", 1), ("p", 5), ("p", 3)]}
    assert [(t.name, t.index) for t in tasks] == order
    assert {t.cost for t in tasks if t.name == "fp"} == {5.0, 3.0, 1.0}


@pytest.mark.parametrize("jobs", [1, 2])
def test_pointed_experiment_in_the_pool_gives_the_serial_results_in_order(tmp_path, pointed, capsys, jobs):
    assert R.reproduce(tmp_path, jobs=jobs) == 0
    r = _res(tmp_path)
    assert r["fp"]["sum"] == 9 and r["fp"]["order"] == [1, 5, 3]     # pool_points order, not finish order
    assert r["fp"]["pooled"] is (jobs > 1)
    out = capsys.readouterr().out
    assert out.index("fake fa") < out.index("fake fp") < out.index("fake fb")
    assert "fp points [1, 5, 3]" in out
    if jobs > 1:
        assert "5 tasks (3 of them points of fp)" in out
    assert all(r["runs"][n]["status"] == "ok" for n in ("fa", "fp", "fb"))


def test_a_failing_point_fails_its_experiment_only(tmp_path, pointed, capsys):
    pointed.update(fp5="fail")
    assert R.reproduce(tmp_path, jobs=2) == 1
    r = _res(tmp_path)
    assert r["runs"]["fp"]["status"] == "failed" and "fp" not in r
    assert r["fa"]["value"] == "ok" and r["fb"]["value"] == "ok"
    assert "fp failed: point ('p', 5): ValueError: point 5 broke" in capsys.readouterr().out


def test_ctrl_c_with_points_running_keeps_the_finished_experiments(tmp_path, pointed, real_sigint):
    pointed.update(fp5="sleep")
    _reproduce_interrupted(tmp_path, jobs=2)
    r = _res(tmp_path)
    assert r["fa"]["value"] == "ok" and r["runs"]["fp"]["status"] == "interrupted" and "fp" not in r


def _strip_host_time(d):
    """An experiment's JSON without its host-time figures (wall seconds) and the plot's path."""
    if isinstance(d, dict):
        return {k: _strip_host_time(v) for k, v in d.items() if k not in ("wall_s", "wall_seconds", "plot")}
    if isinstance(d, list):
        return [_strip_host_time(x) for x in d]
    return d


def test_pooled_mrs_points_give_the_serial_sweep_results(tmp_path, monkeypatch, capsys):
    """arm64_mrs's (policy, N) machines run as tasks of the reproduce pool give, point by point, the
    JSON of the serial in-process sweep (and of arm64_mrs.sweep itself)."""
    monkeypatch.setattr(arm64_mrs, "THREADS", (1, 2, 4))
    monkeypatch.setattr(arm64_mrs, "K_QUICK", 60)
    assert R.reproduce(tmp_path / "serial", quick=True, only=["arm64_mrs"], jobs=1) == 0
    assert "sweep wall time" in capsys.readouterr().out
    assert R.reproduce(tmp_path / "pooled", quick=True, only=["arm64_mrs"], jobs=2) == 0
    out = capsys.readouterr().out
    assert "6 tasks (6 of them points of arm64_mrs)" in out and "in the reproduce pool" in out
    serial = _res(tmp_path / "serial" / "quick")["arm64_mrs"]
    pooled = _res(tmp_path / "pooled" / "quick")["arm64_mrs"]
    assert _strip_host_time(pooled) == _strip_host_time(serial)
    direct = arm64_mrs.sweep((1, 2, 4), 60, workers=1)
    for row in pooled["rows"]:
        for side, pol in (("before", "hook-list"), ("after", "direct")):
            want = json.loads(json.dumps(direct[(pol, row["threads"])]))
            assert _strip_host_time(row[side]) == _strip_host_time(want)
    assert pooled["rows"][-1]["before"]["lock"]["contended"] > 0      # the points did real work
