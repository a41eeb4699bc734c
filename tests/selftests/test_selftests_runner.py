"""emukern.selftests: the verdict and first cause the runner gives, on a kselftest-shaped GCC +
glibc program (guest_asm/c/selftests/ksft_like.c) whose argv picks the outcome; and the TAP
parser, the configuration matrix and the expected-results table."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from emukern.errors import ConfigError
from emukern.selftests import tap
from emukern.selftests.build import Built
from emukern.selftests.catalog import BY_ID, TESTS, SelfTest, select
from emukern.selftests.expected import EXPECTED_FILE, ExpectedTable, judge
from emukern.selftests.runner import KERNELS, Config, RunOptions, matrix, run_one

CC = {"riscv64": "riscv64-linux-gnu-gcc", "arm64": "aarch64-linux-gnu-gcc"}


@pytest.fixture(scope="module")
def ksft_like(tmp_path_factory):
    from emukern.pytest_plugin import GUEST_ASM
    d = tmp_path_factory.mktemp("ksft")
    out = {}
    for arch, cc in CC.items():
        if shutil.which(cc) is None:
            continue
        exe = d / arch / "ksft_like"
        exe.parent.mkdir()
        subprocess.run([cc, "-O2", "-static", "-o", str(exe), str(GUEST_ASM / "c" / "selftests" / "ksft_like.c")],
                       check=True)
        out[arch] = exe
    return out


def _run(ksft_like, arch, mode, kind="tap", **opts):
    if arch not in ksft_like:
        pytest.skip(f"{CC[arch]} is not installed")
    t = SelfTest(arch, "x", "ksft_like", kind=kind, args=(mode,), stop_signal=15 if kind == "stress" else 0)
    return run_one(t, Built(t, ksft_like[arch]), Config((), None), RunOptions(**opts))


@pytest.mark.parametrize("arch", list(CC))
@pytest.mark.parametrize("mode,verdict,counts,cause", [
    ("pass", "pass", "2/0/0", ""),
    ("skip", "skip", "0/0/1", ""),
    ("fail", "fail", "1/1/0", "1 of its cases failed"),
    ("enosys", "fail", "0/1/0", "ENOSYS"),
    ("proc", "fail", "0/1/0", "missing /proc/emukern-selftest-missing"),
    ("segv", "fail", "", "fatal SIGSEGV"),
])
def test_verdict_and_first_cause(ksft_like, arch, mode, verdict, counts, cause):
    o = _run(ksft_like, arch, mode)
    assert o.verdict == verdict, o
    if counts:
        assert o.counts == counts
    assert o.cause.startswith(cause), o.cause
    if mode == "fail":
        assert o.detail == "second"            # the test's own first failing case
    if mode == "enosys":
        assert "450" in o.cause


@pytest.mark.parametrize("arch", list(CC))
def test_stress_test_is_stopped_with_its_signal(ksft_like, arch):
    """An endless loop with a SIGTERM handler: stopped after the bounded time with SIGTERM.
    Until emukern runs user handlers the signal is fatal, and the cause says so."""
    o = _run(ksft_like, arch, "spin", kind="stress", stress_seconds=0.0005)
    assert o.sim_seconds >= 0.0005
    if o.verdict == "pass":                     # signal handlers implemented (issue 12)
        assert o.exit_status == 0
    else:
        assert o.cause.startswith("killed by the SIGTERM that should end it: its handler")


def test_time_limit_stops_a_run(ksft_like):
    arch = next(iter(ksft_like), None)
    if arch is None:
        pytest.skip("no cross compiler")
    o = _run(ksft_like, arch, "spin", kind="exit", time_limit=0.5)
    assert o.verdict == "timeout" and "per-test limit" in o.cause


def test_not_built_is_listed_with_its_reason():
    t = BY_ID["arm64/fp/sve-test"]
    o = run_one(t, Built(t, None, "not in this tree: no arm64/fp/Makefile"), Config((), 128), RunOptions())
    assert o.verdict == "not built" and o.cause.startswith("not in this tree")


# ---- TAP ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("text,counts,first", [
    ("1..3\nok 1 a\nnot ok 2 b\nok 3 c # SKIP no SVE\n", "1/1/1", "b"),
    ("TAP version 13\n1..2\nok 1 x\nok 2 y\n# Totals: pass:2 fail:0 xfail:0 xpass:0 skip:0 error:0\n", "2/0/0", ""),
    # the Totals line wins over counting (kselftest's own tally)
    ("ok 1 x\n# Totals: pass:5 fail:1 xfail:0 xpass:0 skip:2 error:0\n", "5/1/2", ""),
    ("not ok 1 - with dash\n", "0/1/0", "with dash"),
])
def test_tap_parse(text, counts, first):
    t = tap.parse(text)
    assert t.seen and t.counts() == counts and t.first_failure == first


def test_tap_no_tap():
    assert not tap.parse("hello\nworld\n").seen


# ---- matrix -------------------------------------------------------------------------------------
def test_matrix_every_policy_and_vl():
    t = BY_ID["arm64/fp/sve-test"]
    labels = [c.label("arm64") for c in matrix(t)]
    assert len(labels) == 9 and "sve=legacy vl=128" in labels and "sve=p1+p2 vl=512" in labels
    rv = BY_ID["riscv64/vector/v_initval_nolibc"]
    assert len(matrix(rv)) == 3 * 2 * 3      # riscv-discard: eager, deferred, optimize-restore
    assert [c.label("riscv64") for c in matrix(BY_ID["riscv64/hwprobe/hwprobe"])] == ["default"]


def test_matrix_pinned_policy_and_kernel_profile():
    t = BY_ID["arm64/fp/sve-test"]
    assert {c.policy_dict()["arm64-sve"] for c in matrix(t, {"arm64-sve": "p1"})} == {"p1"}
    assert len(matrix(t, KERNELS["before"], (128,))) == 1
    assert matrix(t, KERNELS["before"], (128,))[0].policy_dict() == {"arm64-sve": "legacy"}


def test_select():
    assert [t.id for t in select(only=["fp/sve-test"])] == ["arm64/fp/sve-test"]
    assert {t.arch for t in select("riscv64")} == {"riscv64"}
    assert select(only=["no-such-test"]) == []


# ---- the expected-results table -----------------------------------------------------------------
def test_expected_file_covers_every_test():
    table = ExpectedTable.load()
    missing = [t.id for t in TESTS if t.id not in table.data]
    assert not missing, f"{EXPECTED_FILE.name} lacks {missing}"
    for tid, entry in table.data.items():
        assert tid in BY_ID, f"{EXPECTED_FILE.name}: {tid} is not a test in the catalog"
        if entry["verdict"] != "pass":
            assert entry.get("reason"), f"{tid}: a non-pass expectation needs its reason"
        for w in entry.get("when", []):
            assert w.get("reason") and (w.get("policy") or w.get("vl")), \
                f"{tid}: a [[when]] needs a policy or a VL, and a reason"


def test_expected_lookup_and_judge():
    table = ExpectedTable({"a/b/c": {"verdict": "pass", "when": [
        {"policy": {"riscv-discard": "eager"}, "verdict": "fail", "reason": "written for the patched kernel"}]}})
    e = table.lookup("a/b/c", {"riscv-discard": "eager"}, 128)
    assert e is not None and e.verdict == "fail" and e.under_policy
    assert table.lookup("a/b/c", {"riscv-discard": "deferred"}, 128).verdict == "pass"

    class O:
        verdict = "fail"
        expected = expect_reason = ""
        unexpected = False
    o = O()
    judge(o, e)
    assert not o.unexpected and o.expect_reason.startswith("expected under this policy")
    judge(o, table.lookup("a/b/c", {}, None))
    assert o.unexpected
    o.verdict = "pass"
    judge(o, ExpectedTable({"x": {"verdict": "fail", "reason": "r"}}).lookup("x", {}, None))
    assert o.unexpected                 # a pass where a failure was expected: update the table


def test_expected_bad_verdict_is_a_clear_error():
    with pytest.raises(ConfigError, match="verdict"):
        ExpectedTable({"a": {"verdict": "green"}})


def test_internal_error_is_the_runs_cause(ksft_like, monkeypatch):
    arch = next(iter(ksft_like), None)
    if arch is None:
        pytest.skip("no cross compiler")
    from emukern.api import Machine

    def boom(self, *a, **k):
        raise RuntimeError("simulated emukern bug")
    monkeypatch.setattr(Machine, "load", boom)
    o = _run(ksft_like, arch, "pass")
    assert o.verdict == "fail" and o.cause == "emukern internal error: RuntimeError: simulated emukern bug"


def test_expected_vl_only_when():
    """A [[when]] naming only a VL: the architecture treats that VL differently (arm64 hwcap's
    F64MM probe is UNDEFINED below VL 256)."""
    table = ExpectedTable({"a/b/c": {"verdict": "pass", "when": [
        {"vl": 128, "verdict": "fail", "reason": "UNDEFINED below VL 256"}]}})
    e = table.lookup("a/b/c", {"arm64-mrs": "direct"}, 128)
    assert e is not None and e.verdict == "fail" and e.under == "configuration"
    assert table.lookup("a/b/c", {"arm64-mrs": "direct"}, 256).verdict == "pass"
