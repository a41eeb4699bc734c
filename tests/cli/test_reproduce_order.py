"""`emukern reproduce` leads with the reproduction: the host-speed benchmarks (TIMING) run after the
four changes' experiments, under their own heading, and their misses are shown apart as this
host's speed (emukern/bench/reproduce.py); `--no-host-speed` leaves them out.  A Debian download
says what it fetches and how big it is (emukern/debian.py)."""
from __future__ import annotations

import sys
import types

import pytest

import emukern.bench.reproduce as R
from emukern.cli import main


@pytest.fixture
def fakes(monkeypatch):
    names = ["speed", "change_a", "change_b"]
    for n in names:
        mod = types.ModuleType(f"emukern.bench.{n}")
        mod.TITLE = f"fake {n}"

        def run(ctx, n=n):
            ctx.console.print(f"ran {n}")
            return {"value": n}
        mod.run = run
        monkeypatch.setitem(sys.modules, f"emukern.bench.{n}", mod)
    monkeypatch.setattr(R, "EXPERIMENTS", names)
    monkeypatch.setattr(R, "TIMING", ("speed",))
    return names


@pytest.mark.parametrize("jobs", [1, 2])
def test_host_speed_comes_after_the_reproduction(tmp_path, fakes, capsys, jobs):
    assert R.reproduce(tmp_path, jobs=jobs) == 0
    out = capsys.readouterr().out
    assert out.index("ran change_a") < out.index("ran change_b") < out.index("Host speed") < out.index("ran speed")
    assert "not part of the reproduction" in " ".join(out.split()).lower()


def test_no_host_speed_leaves_them_out(tmp_path, fakes, capsys):
    assert R.reproduce(tmp_path, jobs=1, host_speed=False) == 0
    out = capsys.readouterr().out
    assert "ran speed" not in out and "ran change_a" in out
    assert R.reproduce(tmp_path, jobs=1, host_speed=False, only=["speed"]) == 0   # asked by name: runs
    assert "ran speed" in capsys.readouterr().out


def test_a_host_speed_miss_is_not_a_failed_reproduction(capsys):
    from rich.console import Console
    ctx = R.ReproduceContext(out_dir=None, quick=False, console=Console(width=200, highlight=False))
    ctx.results = {"selfbench": {"arches": {"arm64": {"mips_ratio": 0.3, "mips_target_met": False}}},
                   "arm64_mrs": {"growth_before": 12.0, "target_before_ok": False}}
    R._print_summary(ctx)
    out = capsys.readouterr().out
    summary, host = out.split("Host speed on this machine (not part of the reproduction)")
    assert "emukern itself" not in summary and "MIPS" not in summary
    assert "x12.0 MISSED" in summary                       # a change's target missed still says so
    assert "0.30 (below target on this host)" in host and "MISSED" not in host


def test_reproduce_cli_has_no_host_speed_and_says_it_downloads(capsys):
    with pytest.raises(SystemExit):
        main(["reproduce", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--no-host-speed" in text and "downloads" in text.lower()


def test_a_debian_download_says_what_and_how_big(tmp_path, monkeypatch, capsys):
    from emukern.debian import AptFetcher
    f = AptFetcher("trixie", "all", cache=tmp_path)
    calls = []

    def fake_apt(tool, *args, cwd=None, timeout=900):
        calls.append(args)
        if "--print-uris" in args:
            return "'http://deb.example/pool/p_1.0_all.deb' p_1.0_all.deb 153123456 SHA256:00\n"
        (cwd / "p_1.0_all.deb").write_bytes(b"!")
        return ""
    monkeypatch.setattr(f, "version", lambda pkg: "1.0")
    monkeypatch.setattr(f, "_apt", fake_apt)
    got = f.download("p")
    assert got.name == "p_1.0_all.deb"
    err = capsys.readouterr().err
    assert "emukern: downloading p 1.0 (153 MB) from Debian trixie" in err
    assert f.download("p") == got and capsys.readouterr().err == ""      # cached: silent
