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


def _arch(mips_ratio: float, sys_ratio: float) -> dict:
    return {"raw_mips": 100.0, "emukern_mips": 100 * mips_ratio, "mips_ratio": mips_ratio,
            "mips_target_met": mips_ratio >= S.TARGET_MIPS_RATIO, "raw_syscall_us": 1.0,
            "emukern_syscall_us": sys_ratio, "syscall_ratio": sys_ratio,
            "syscall_target_met": sys_ratio <= S.TARGET_SYSCALL_RATIO, "qemu_mips": None,
            "qemu_syscall_us": None, "qemu_spin": "qemu-riscv64 spin failed with status 1: boom", "qemu_syscall": "ok"}


def test_missed_targets_are_marked():
    con = Console(record=True, width=200)
    S.print_table({"native_counter": True, "arches": {"riscv64": _arch(0.10, 2.0), "arm64": _arch(0.5, 4.5)}}, con)
    text = con.export_text()
    assert "0.10 MISSED" in text and "4.5× MISSED" in text
    assert "0.50 MISSED" not in text and "2.0× MISSED" not in text
    assert "MISSED target(s): riscv64 MIPS ratio, arm64 syscall ratio" in text
    assert "failed with status 1: boom" in text


def test_measure_records_target_flags(monkeypatch):
    monkeypatch.setitem(S.QEMU, "riscv64", ["no-such-qemu-binary-xyz"])
    monkeypatch.setitem(S.QEMU, "arm64", ["no-such-qemu-binary-xyz"])
    res = S.measure(quick=True)
    for d in res["arches"].values():
        assert d["mips_target_met"] == (d["mips_ratio"] >= S.TARGET_MIPS_RATIO)
        assert d["syscall_target_met"] == (d["syscall_ratio"] <= S.TARGET_SYSCALL_RATIO)
        assert d["qemu_mips"] is None and "not installed" in d["qemu_spin"]
