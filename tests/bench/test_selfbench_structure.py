"""emukern bench's structure (issue 19): alternation, statistics, JSON schema, target marks — small
counts, never a timed assertion."""
from __future__ import annotations

import json
import shutil

import pytest
from rich.console import Console

from emukern.bench import peers, selfbench as S
from emukern.bench.stats import Target, Unavailable, alternate, figure, pairwise_ratios, summary
from emukern.errors import ConfigError

TINY = S.Sizes(spin_n=20_000, sys_n=200, sig_n=20, pid_iters=10, pid_blocks=1, rvv_iters=5, vset_n=200,
               mrs_k=5, mrs_threads=(1, 2), profile_n=100)


@pytest.fixture
def no_peers(monkeypatch):
    """qemu-user and Qiling absent, whatever this machine has."""
    for arch in S.ARCHES:
        monkeypatch.setitem(S.QEMU, arch, ["no-such-qemu-binary-xyz"])
    monkeypatch.setattr(peers, "QEMU_BIN", {a: "no-such-qemu-binary-xyz" for a in S.ARCHES})
    monkeypatch.setattr(peers, "qiling_python", lambda: None)


def test_alternate_rotates_the_order_every_round():
    log: list[str] = []
    runners = {k: (lambda k=k: log.append(k) or 1.0) for k in "abc"}
    samples, notes = alternate(runners, 3)
    assert log == list("abc" "bca" "cab")
    assert {k: len(v) for k, v in samples.items()} == {"a": 3, "b": 3, "c": 3} and notes == {}


def test_unavailable_contender_gives_no_samples_and_is_not_retried():
    calls = {"x": 0}

    def gone() -> float:
        calls["x"] += 1
        raise Unavailable("peer-xyz not installed")
    samples, notes = alternate({"emukern": lambda: 2.0, "peer": gone}, 5)
    assert samples == {"emukern": [2.0] * 5, "peer": []}
    assert notes == {"peer": "peer-xyz not installed"} and calls["x"] == 1


def test_summary_min_median_max():
    s = summary([3.0, 1.0, 2.0, 10.0])
    assert (s["n"], s["min"], s["median"], s["max"]) == (4, 1.0, 2.5, 10.0)
    assert summary([])["median"] is None


def test_headline_is_median_of_pairwise_ratios_not_ratio_of_medians():
    # the machine drifts between rounds: each round's ratio is 1.0 except one, the medians' ratio is 2.0
    ek, base = [1.0, 10.0, 100.0], [1.0, 5.0, 100.0]
    assert pairwise_ratios(ek, base) == [1.0, 2.0, 1.0]
    f = figure("x", "µs", "emukern", {"emukern": ek, "raw": base}, {}, Target("<=", 1.5, "ratio", "raw"))
    assert f["contenders"]["raw"]["ratio"]["median"] == 1.0
    assert f["target_value"] == 1.0 and f["met"] is True
    assert "ratio" not in f["contenders"]["emukern"]


@pytest.mark.parametrize("op,limit,x,met", [(">=", 0.6, 0.59, False), (">=", 0.6, 0.6, True),
                                             ("<=", 2.0, 2.01, False), ("<=", 2.0, 1.0, True), ("<=", 2.0, None, None)])
def test_target_verdicts(op, limit, x, met):
    assert Target(op, limit).met(x) is met


def test_value_target_uses_emukerns_median_and_missing_baseline_gives_no_verdict():
    f = figure("pid", "µs/getpid", "emukern", {"emukern": [4.0, 6.0, 7.0]}, {}, Target("<=", 5.0, "value"))
    assert f["target_value"] == 6.0 and f["met"] is False
    g = figure("v", "s", "emukern", {"emukern": [1.0], "qemu-user": []}, {"qemu-user": "not installed"},
               Target("<=", 10.0, "ratio", "qemu-user"))
    assert g["target_value"] is None and g["met"] is None
    assert g["contenders"]["qemu-user"]["note"] == "not installed"


def _res(figs: list[dict]) -> dict:
    missed = [f["figure"] for f in figs if f.get("met") is False]
    return {"reps": 5, "quick": False, "native_counter": True, "figures": figs, "missed": missed}


def test_table_marks_met_and_missed_and_names_absent_peers():
    mips = figure("riscv64 guest MIPS", "MIPS", "emukern", {"emukern": [50.0] * 5, "raw Unicorn": [100.0] * 5},
                  {"Qiling": "Qiling not installed"}, Target(">=", 0.6, "ratio", "raw Unicorn"), higher_is_better=True)
    mips["contenders"]["Qiling"] = {**summary([]), "note": "Qiling not installed"}
    sysc = figure("arm64 null syscall", "µs", "emukern", {"emukern": [3.0] * 5, "raw Unicorn": [2.0] * 5}, {},
                  Target("<=", 2.0, "ratio", "raw Unicorn"))
    skipped = {"figure": "arm64 fp-pidbench (upstream selftest)", "skipped": "no Linux source in the cache",
               "contenders": {}, "target": None, "met": None}
    con = Console(record=True, width=220)
    S.print_table(_res([mips, sysc, skipped]), con)
    text = con.export_text()
    assert "0.50× [0.50–0.50]" in text and "ratio >= 0.6× raw Unicorn: MISSED" in text
    assert "1.50× [1.50–1.50]" in text and "ratio <= 2× raw Unicorn: met" in text
    assert "Qiling n/a: Qiling not installed" in text
    assert "not run — no Linux source in the cache" in text
    assert "MISSED target(s): riscv64 guest MIPS" in text and "arm64 null syscall" not in text.split("MISSED target(s)")[1]


def test_measure_schema_five_rounds_and_json(no_peers, tmp_path):
    res = S.measure(reps=5, only=["mips", "syscall"], sizes=TINY)
    assert res["reps"] == 5 and [f["key"] for f in res["figures"]] == [
        "riscv64.mips", "arm64.mips", "riscv64.mips_cksum", "arm64.mips_cksum", "riscv64.syscall", "arm64.syscall"]
    for f in res["figures"]:
        c = f["contenders"]
        assert c["emukern"]["n"] == 5 and c["raw Unicorn"]["n"] == 5
        assert c["raw Unicorn"]["min"] <= c["raw Unicorn"]["median"] <= c["raw Unicorn"]["max"]
        assert c["raw Unicorn"]["ratio"]["n"] == 5
        assert c["qemu-user"]["n"] == 0 and "not installed" in c["qemu-user"]["note"]
        assert c["Qiling"]["n"] == 0 and "Qiling not installed" in c["Qiling"]["note"]
        assert f["met"] == Target(f["target"]["op"], f["target"]["value"]).met(c["raw Unicorn"]["ratio"]["median"])
        if ".mips" in f["key"]:     # the floor rows: raw Unicorn with counter.c's empty/adding block hook
            for floor in (S.FLOOR, S.FLOOR_ADD):
                assert c[floor]["n"] == 5 and c[floor]["min"] > 0 and c[floor]["ratio"]["n"] == 5
            ceil = f["counting_ceiling"]     # the adding hook over raw Unicorn, round by round
            assert ceil["n"] == 5 and ceil["samples"] == [a / b for a, b in zip(c[S.FLOOR_ADD]["samples"],
                                                                                c["raw Unicorn"]["samples"])]
        else:
            assert S.FLOOR not in c and S.FLOOR_ADD not in c and "counting_ceiling" not in f
    for arch in S.ARCHES:
        a = res["arches"][arch]
        fm = next(f for f in res["figures"] if f["key"] == f"{arch}.mips")
        fs = next(f for f in res["figures"] if f["key"] == f"{arch}.syscall")
        assert a["mips_ratio"] == fm["contenders"]["raw Unicorn"]["ratio"]["median"]
        assert a["syscall_ratio"] == fs["contenders"]["raw Unicorn"]["ratio"]["median"]
        assert a["mips_target_met"] == (a["mips_ratio"] >= S.TARGET_MIPS_RATIO)
        assert a["syscall_target_met"] == (a["syscall_ratio"] <= S.TARGET_SYSCALL_RATIO)
        assert a["qemu_mips"] is None and "not installed" in a["qemu_spin"]
    assert fm["emukern_user_insns"][0] >= 2 * TINY.spin_n          # the loop, plus start-up and exit
    assert {t["figure"] for t in res["targets"]} == {f["figure"] for f in res["figures"]}
    assert res["missed"] == [t["figure"] for t in res["targets"] if t["met"] is False]
    out = tmp_path / "b.json"
    S.write_json(res, out)
    assert json.loads(out.read_text())["arches"]["arm64"]["syscall_ratio"] == res["arches"]["arm64"]["syscall_ratio"]


def test_every_measurement_runs_with_small_counts(no_peers, monkeypatch):
    import emukern.selftests.pidbench as P
    monkeypatch.setattr(P, "build", lambda full=False, fetch=True: (None, "no Linux source in the cache", 0))
    res = S.measure(reps=1, sizes=TINY)
    keys = {f["key"] for f in res["figures"]}
    assert keys >= {"riscv64.mips", "arm64.mips", "riscv64.syscall", "arm64.syscall", "arm64.pidbench",
                    "arm64.pidbench.upstream", "riscv64.rvv_m1.vadd.vv", "riscv64.rvv_m1.vle32+vse32",
                    "riscv64.vsetvli_getppid", "arm64.mrs_sweep"}
    by = {f["key"]: f for f in res["figures"]}
    assert by["arm64.pidbench.upstream"]["skipped"] == "no Linux source in the cache"
    # fp_pidbench.S makes 4 loops x ITERS x BLOCKS getpid calls
    assert by["arm64.pidbench"]["getpid_calls"] == 4 * TINY.pid_iters * TINY.pid_blocks
    assert by["riscv64.vsetvli_getppid"]["met"] is None          # no qemu, no ratio, no verdict
    assert by["arm64.mrs_sweep"]["contenders"]["emukern"]["n"] == 1
    assert all(by[k]["met"] in (True, False) for k in ("arm64.pidbench", "riscv64.rvv_m1.vadd.vv", "arm64.mrs_sweep"))


def test_unknown_measurement_and_zero_reps_are_clear_errors():
    with pytest.raises(ConfigError, match="unknown bench measurement nope"):
        S.measure(only=["nope"])
    with pytest.raises(ConfigError, match="at least one round"):
        S.measure(reps=0, only=["rvv"])


def test_profile_sees_the_trap_path(no_peers):
    rows = S.profile_syscall("arm64", 100, top=10_000)
    by = {r["function"]: r for r in rows}
    # a getppid takes the kernel's syscall fast path (Kernel.syscall_entry) to its handler
    assert by["syscall_entry"]["ncalls"] >= 100 and by["sys_getppid"]["ncalls"] >= 100
    assert rows == sorted(rows, key=lambda r: r["tottime_s"], reverse=True)


def test_cli_bench_writes_json_with_profile(no_peers, tmp_path, capsys):
    from emukern.cli import main
    out = tmp_path / "bench.json"
    assert main(["bench", "--quick", "--reps", "1", "--only", "rvv", "--profile", "--json", str(out)]) == 0
    d = json.loads(out.read_text())
    assert d["reps"] == 1 and {f["measurement"] for f in d["figures"]} == {"rvv"}
    assert set(d["profile"]) == {"riscv64", "arm64"} and d["profile"]["arm64"]["top"]
    assert "cProfile: arm64 null-syscall path" in capsys.readouterr().out


@pytest.mark.qemu
@pytest.mark.skipif(shutil.which("qemu-riscv64") is None, reason="qemu-riscv64 is not installed")
def test_vsetvli_loop_against_qemu_gives_a_ratio():
    res = S.measure(reps=1, only=["vsetvli"], sizes=TINY)
    f = res["figures"][0]
    assert f["contenders"]["qemu-user"]["n"] == 1 and f["contenders"]["qemu-user"]["ratio"]["n"] == 1
    assert f["met"] in (True, False)
    # the floors: raw Unicorn on the same ELF (binding hook, bare ctypes hook), each its own row
    # and its ratio to qemu-user
    for who in ("raw Unicorn", "raw Unicorn (ctypes hook)"):
        assert f["contenders"][who]["n"] == 1 and f["contenders"][who]["note"] == "ok"
        fl = f["floor_vs_qemu"][who]
        assert fl["n"] == 1 and fl["median"] == pytest.approx(
            f["contenders"][who]["median"] / f["contenders"]["qemu-user"]["median"])


def test_qiling_absent_is_a_note(monkeypatch):
    monkeypatch.setenv("EMUKERN_QILING_PYTHON", "/no/such/python-xyz")
    assert peers.qiling_python() is None
    with pytest.raises(Unavailable, match="Qiling not installed"):
        peers.qiling_run_seconds("arm64", S._elf("arm64", "syscall_loop"), ["10"])


@pytest.mark.skipif(peers.qiling_python() is None, reason="Qiling is not installed (optional peer)")
def test_qiling_runs_the_same_guest():
    assert peers.qiling_run_seconds("arm64", S._elf("arm64", "syscall_loop"), ["50"]) > 0
