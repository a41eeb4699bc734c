"""The policy study (emukern.bench.policy_study) in quick mode, from cached roots and builds only.

Skips when the Debian root or the RVV programs are not cached (no fetching here): `emukern
reproduce --only policy_study --quick` once on a networked machine fills the caches."""
from pathlib import Path

import pytest
from rich.console import Console

from emukern.bench import policy_study, rvv_programs
from emukern.bench.reproduce import EXPERIMENTS, ReproduceContext, summary_rows


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:
    mp = pytest.MonkeyPatch()
    mp.setattr(policy_study, "FETCH", False)
    mp.setattr(rvv_programs, "FETCH", False)
    con = Console(record=True, width=160)
    try:
        res = policy_study.run(ReproduceContext(tmp_path_factory.mktemp("study"), True, con))
    finally:
        mp.undo()
    return res, con.export_text()


def test_registered():
    assert "policy_study" in EXPERIMENTS


def test_arm64_rows_per_program_and_policy(result):
    res, text = result
    a = res["arm64"]
    if not a["ran"]:
        pytest.skip(f"arm64 half not run: {a['why']}")
    quick = [n for n, _a in policy_study._programs("quick")]
    assert {(r["program"], r["policy"]) for r in a["rows"]} == \
        {(n, p) for n in quick for p in policy_study.ARM64_POLICIES}
    for r in a["rows"]:
        for key in policy_study.SVE_KEYS + ("syscalls_tif_sve", "flushes", "cycles", "user_insns", "tasks_with_loads"):
            assert r[key] >= 0, (r["program"], r["policy"], key)
        assert r["retrap_after_load"] <= r["load_fpsimd_tif_sve"]
        assert r["tasks_retrap_majority"] <= r["tasks_with_loads"]
        assert r["sve_trap"] > 0                  # every glibc process takes one (glibc's SVE routines)
        if r["policy"] != "legacy":
            assert r["retrap_after_load"] == 0 and r["drop_tif_sve_load"] == 0   # no timeout passes here
    # the policy changes kernel work, not user work (less the re-executed trapping instructions);
    # processes side by side may differ by a little (the interleaving moves with kernel cycles)
    assert a["invariants_broken"] == []
    for prog in quick:
        rs = [r for r in a["rows"] if r["program"] == prog]
        work = {r["user_work"] for r in rs}
        if max(r["tasks"] for r in rs) == 1:
            assert len(work) == 1, prog
        assert max(work) - min(work) <= max(work) * policy_study.SPREAD_LIMIT, prog
    assert set(a["overall"]) == set(policy_study.ARM64_POLICIES)
    assert "Cover letter (patch 1)" in text
    rows = summary_rows({"policy_study": res})
    assert any("FPSIMD-only loads followed by another SVE trap" in r[1] for r in rows)


def test_riscv_rows_and_vector_use(result):
    res, _text = result
    v = res["riscv64"]
    if not v["ran"]:
        pytest.skip(f"RISC-V half not run: {v['why']}")
    names = {r["program"] for r in v["rows"]}
    assert len(names) == 5                     # minigzip and bzip2 both ways, vpipe
    assert {(r["program"], r["policy"], r["discard"]) for r in v["rows"]} == \
        {(n, p, d) for n in names for p in policy_study.RISCV_POLICIES for d in policy_study.DISCARD}
    for r in v["rows"]:
        for key in ("saves", "restores", "discards", "first_use", "cycles", "user_insns"):
            assert r[key] >= 0
        assert r["vector_insns"] > 0, r["program"]          # really executed vector instructions
        assert r["first_use"] >= 1
    assert v["invariants_broken"] == []
    for prog in names:
        rs = [r for r in v["rows"] if r["program"] == prog]
        if max(r["tasks"] for r in rs) == 1:
            assert len({r["user_work"] for r in rs}) == 1, prog
            assert len({r["vector_insns"] for r in rs}) == 1, prog
    # the memcpy/strlen pipe is mostly vector work; the knob at 1 discards at syscalls
    pipe = [r for r in v["rows"] if r["program"].startswith("vpipe")]
    assert all(r["vector_insns"] > 10_000 for r in pipe)
    assert all(r["discards"] > 0 for r in pipe if r["discard"] == 1)
    assert all(r["discards"] == 0 for r in pipe if r["discard"] == 0)
    assert all(c and c > 0 for c in v["static_vset"].values() if c is not None)


def test_builds_hold_only_instructions_the_rvv_unit_runs(monkeypatch: pytest.MonkeyPatch):
    """Every source is compiled with V and the binaries hold no vector instruction the RVV unit
    refuses (the build fails rather than run into SIGILL; it no longer falls back to scalar)."""
    monkeypatch.setattr(rvv_programs, "FETCH", False)
    try:
        bins = rvv_programs.build()
        report = rvv_programs.build_report()
    except rvv_programs.Unavailable as exc:
        pytest.skip(str(exc))
    if rvv_programs.vector_instructions(bins["vpipe"]) is None:
        pytest.skip("no llvm-objdump")
    for name, elf in bins.items():
        assert rvv_programs.unimplemented(elf) == {}, name
        assert rvv_programs.vector_instructions(elf) > 0, name
    assert report["vpipe"]["vector_sources"] == ["vpipe.c"]
    assert report["minigzip"]["vector_sources"] == list(rvv_programs.ZLIB_FILES)
    assert report["bzip2"]["vector_sources"] == list(rvv_programs.BZIP2_FILES)
