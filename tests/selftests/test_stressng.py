"""The stress-ng suite (emukern/selftests/stressng.py): how a run is judged, the expectations
file, the CLI, and — when Debian's stress-ng can be had (cached, or fetched through the private
apt configuration) — a subset of stressors run under emukern on both arches, each of which must
give the verdict stressng_expected.toml records (a pass, for every stressor the real 6.12 kernel
passes, unless the file says why not)."""
from __future__ import annotations

import pytest

from emukern.selftests import stressng as S

# what CI runs: stressors that finish in a few host seconds each (about 3 s per run here, 28 runs
# in about 45 s on one worker) and cover fork/clone/wait, futex, pipes, mmap/munmap, brk, signals,
# eventfd, AF_UNIX socketpair, SysV and POSIX message queues, fd tables, rseq and memcpy
CI_SUBSET = ("fork", "clone", "futex", "pipe", "mmap", "brk", "sigpending", "eventfd", "sockpair", "msg",
             "mq", "dup", "rseq", "memcpy")


def test_summary_verdict_reads_stress_ngs_own_lines():
    ok = ("stress-ng: info:  [1] dispatching hogs: 1 dup\nstress-ng: info:  [1] skipped: 0\n"
          "stress-ng: info:  [1] passed: 1: dup (1)\nstress-ng: info:  [1] failed: 0\n")
    assert S.summary_verdict(ok, 0) == ("pass", "")
    bad = ("stress-ng: fail:  [2] pipe: read data mismatch\nstress-ng: info:  [1] passed: 0\n"
           "stress-ng: info:  [1] failed: 1: pipe (1)\n")
    assert S.summary_verdict(bad, 2) == ("fail", "pipe: read data mismatch")
    skip = ("stress-ng: info:  [2] exec: running as root, won't run test.\n"
            "stress-ng: info:  [1] skipped: 1: exec (1)\nstress-ng: info:  [1] passed: 0\n"
            "stress-ng: info:  [1] failed: 0\n")
    assert S.summary_verdict(skip, 0, "exec") == ("skip", "exec: running as root, won't run test.")
    root = ("stress-ng: info:  [1] exec stressor must not run as root, skipping the stressor\n"
            "stress-ng: info:  [1] skipped: 1: exec (1)\nstress-ng: info:  [1] passed: 0\n")
    assert S.summary_verdict(root, 0, "exec") == ("skip", "exec stressor must not run as root, skipping the stressor")
    assert S.summary_verdict("", 139)[0] == "fail"
    # a pass with a failing exit status is not a pass
    assert S.summary_verdict(ok, 2)[0] == "fail"


def test_every_stressor_is_bounded_and_self_checking():
    for name in S.STRESSORS:
        args = S.stressng_args(name)
        assert args[:3] == ["--verify", "--seed", "1"]
        assert f"--{name}-ops" in args and f"--{name}" in args


def test_the_expectations_file_is_valid_and_gives_reasons():
    exp = S.load_expected()
    assert set(exp) <= set(S.ARCHES)
    for arch, table in exp.items():
        for name, e in table.items():
            assert name in S.STRESSORS
            if e.get("verdict", "pass") != "pass":
                assert e.get("reason"), f"{arch}.{name}"
            if e.get("real") == "pass" and e.get("verdict", "pass") != "pass":
                # the target: what the real kernel passes passes here, or the file says why not
                assert len(e["reason"]) > 20, f"{arch}.{name}"


def test_an_unlisted_stressor_must_pass():
    o = S.Outcome("dup", "arm64", verdict="fail")
    S.judge(o, {})
    assert o.expected == "pass" and o.unexpected
    o = S.Outcome("dup", "arm64", verdict="fail", real="pass")
    S.judge(o, {})
    assert o.real_regression


def test_cli_lists_the_suite(capsys):
    from emukern.cli import main
    assert main(["selftests", "--suite", "stress-ng", "--list", "--only", "fork,pipe"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("fork") and "--pipe-ops 5" in out


def test_cli_refuses_an_unknown_stressor(capsys):
    from emukern.cli import main
    assert main(["selftests", "--suite", "stress-ng", "--list", "--only", "nosuch"]) != 0
    assert "not a stressor" in capsys.readouterr().err


def _root(arch: str):
    if S.root_ready(arch):
        return S.root_dir(arch)
    try:
        return S.build_root(arch)
    except Exception as exc:  # noqa: BLE001 - no archive, no dpkg-deb: the packages cannot be had
        pytest.skip(f"stress-ng for {arch} is neither cached nor fetchable: {exc}")


@pytest.mark.parametrize("name", CI_SUBSET)
@pytest.mark.parametrize("arch", S.ARCHES)
def test_stressor_verifies_under_emukern(arch, name):
    _root(arch)
    o = S.run_emukern(name, arch, S.DEFAULT_OPS, time_limit=120)
    S.judge(o, S.load_expected())
    assert not o.unexpected and not o.real_regression, (
        f"{arch} {name}: {o.verdict} (expected {o.expected}): {o.cause}\n{o.output[-1500:]}")
    assert o.host_mb <= S.HOST_MEM_BOUND_MB
