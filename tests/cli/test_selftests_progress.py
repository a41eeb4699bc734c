"""`emukern selftests` shows progress without -v and, on Ctrl-C, prints the table of the runs that
finished and exits 130 (emukern/selftests/suite.py _Bar, SuiteInterrupted).  The fetch, the
builds and the runs are stubbed: a patched run_one raises KeyboardInterrupt at its fourth call."""
from __future__ import annotations

from pathlib import Path

import pytest

import emukern.selftests.suite as suite
from emukern.cli import main
from emukern.selftests.build import Built
from emukern.selftests.runner import Outcome
from emukern.selftests.source import LinuxSource


@pytest.fixture
def stubbed(monkeypatch, tmp_path):
    calls = []

    def fake_run_one(t, built, cfg, opts):
        calls.append((t.id, cfg.label(t.arch)))
        if len(calls) == 4:
            raise KeyboardInterrupt
        return Outcome(test=t.id, config=cfg.label(t.arch), verdict="pass", counts="1/0/0")

    monkeypatch.setattr(suite, "get_source", lambda *a, **k: LinuxSource(tmp_path, "6.12.99", "stub"))
    monkeypatch.setattr(suite, "Builder", lambda src: object())
    monkeypatch.setattr(suite, "build_with_helpers", lambda b, t: Built(t, None, "stub"))
    monkeypatch.setattr(suite, "run_one", fake_run_one)
    return calls


def test_ctrl_c_prints_what_finished_and_exits_130(stubbed, capsys):
    rc = main(["selftests", "--only", "sve-test", "--vl", "128", "--vl", "256"])
    out, err = capsys.readouterr()
    assert rc == 130
    assert len(stubbed) == 4
    assert "interrupted after 3 runs" in out and "sve-test" in out and "pass" in out
    assert "emukern: interrupted: 3 runs finished" in err


def test_progress_without_verbose(stubbed, capsys, monkeypatch):
    """Without -v and with stderr not a terminal (as here), one line per test with the run count."""
    suite_runs = []
    real = suite.run_suite

    def spy(*a, **k):
        suite_runs.append(k.get("advance"))
        return real(*a, **k)

    monkeypatch.setattr(suite, "run_suite", spy)
    stubbed.clear()
    rc = main(["selftests", "--only", "hwprobe,cbo"])
    err = capsys.readouterr().err
    assert rc in (0, 1) and suite_runs and suite_runs[0] is not None
    assert "selftests: [0/" in err and "build riscv64/hwprobe/hwprobe" in err
    assert "build riscv64/hwprobe/cbo" in err


def test_the_bar_on_a_terminal_counts_runs(monkeypatch):
    import sys
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    bar = suite._Bar(5, True)
    assert bar.progress is not None and not bar.lines
    with bar:
        bar.advance("build x")
        bar.advance("")
        bar.advance("")
    assert bar.progress.tasks[0].completed == 2 and bar.progress.tasks[0].total == 5
    assert suite._Bar(5, False).progress is None          # -v: the step lines instead
