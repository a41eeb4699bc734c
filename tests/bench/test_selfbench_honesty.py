"""selfbench: a failing qemu gives no figure, a missed target is marked in the table and JSON."""
from __future__ import annotations

import shutil

import pytest
from rich.console import Console

from emukern.bench import selfbench as S


@pytest.mark.skipif(shutil.which("false") is None, reason="needs the `false` command")
def test_failing_qemu_gives_no_time(monkeypatch):
    monkeypatch.setitem(S.QEMU, "riscv64", ["false"])
    t, note = S.qemu_wall("riscv64", "spin", 10)
    assert t is None and "failed with status 1" in note


def test_missing_qemu_says_so(monkeypatch):
    monkeypatch.setitem(S.QEMU, "arm64", ["no-such-qemu-binary-xyz"])
    assert S.qemu_wall("arm64", "spin", 10) == (None, "no-such-qemu-binary-xyz not installed")


def test_missed_targets_are_marked():
    from emukern.bench.stats import Target, figure
    figs = [figure(f"{arch} guest MIPS", "MIPS", "emukern", {"emukern": [100 * m], "raw Unicorn": [100.0]}, {},
                   Target(">=", S.TARGET_MIPS_RATIO, "ratio", "raw Unicorn"), key=f"{arch}.mips")
            for arch, m in (("riscv64", 0.10), ("arm64", 0.7))]
    figs += [figure(f"{arch} null syscall", "µs", "emukern", {"emukern": [r], "raw Unicorn": [1.0],
                    "qemu-user": []}, {"qemu-user": "qemu-riscv64 spin failed with status 1: boom"},
                    Target("<=", S.TARGET_SYSCALL_RATIO, "ratio", "raw Unicorn"), key=f"{arch}.syscall")
             for arch, r in (("riscv64", 1.5), ("arm64", 4.5))]
    res = {"reps": 1, "native_counter": True, "figures": figs,
           "missed": [f["figure"] for f in figs if f["met"] is False]}
    con = Console(record=True, width=200)
    S.print_table(res, con)
    text = con.export_text()
    assert text.count("MISSED") == 3 and text.count(": met") == 2
    assert "MISSED target(s): riscv64 guest MIPS, arm64 null syscall" in text
    assert "failed with status 1: boom" in text
    a = S.arches_view(figs)
    assert a["riscv64"]["mips_target_met"] is False and a["arm64"]["syscall_target_met"] is False
    assert a["arm64"]["mips_target_met"] is True and a["riscv64"]["syscall_target_met"] is True


def test_measure_records_target_flags(monkeypatch):
    from emukern.bench import peers
    monkeypatch.setitem(S.QEMU, "riscv64", ["no-such-qemu-binary-xyz"])
    monkeypatch.setitem(S.QEMU, "arm64", ["no-such-qemu-binary-xyz"])
    monkeypatch.setattr(peers, "qiling_python", lambda: None)
    res = S.measure(quick=True, reps=1, only=["mips", "syscall"])
    for d in res["arches"].values():
        assert d["mips_target_met"] == (d["mips_ratio"] >= S.TARGET_MIPS_RATIO)
        assert d["syscall_target_met"] == (d["syscall_ratio"] <= S.TARGET_SYSCALL_RATIO)
        assert d["qemu_mips"] is None and "not installed" in d["qemu_spin"]
