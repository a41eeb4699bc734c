"""Tables never cut numbers: labels fold, and a table too wide for the terminal is split."""
from __future__ import annotations

import io

import pytest
from rich.table import Table

from emukern.api import Machine
from emukern.report import FitConsole, print_run_summary

BIG = ["1,282,512,345", "98,765,432,109", "123456", "7", "1,000,000", "-6.78 %", "x1.326", "4.5× MISSED"]


def _table(box: bool) -> Table:
    t = Table(title="wide", box=None) if not box else Table(title="wide")
    for c in ("name", "comm", *[f"column {i}" for i in range(len(BIG))], "state"):
        t.add_column(c, justify="right")
    for i in range(3):
        t.add_row(f"row{i}", "a_rather_long_command_name", *BIG, "sleeping")
    return t


@pytest.mark.parametrize("width", [60, 80, 120])
@pytest.mark.parametrize("box", [False, True])
def test_numbers_survive_any_width(width, box):
    f = io.StringIO()
    FitConsole(file=f, width=width).print(_table(box))
    out = f.getvalue()
    assert max(len(line) for line in out.splitlines()) <= width
    cells = [c for line in out.splitlines() for c in line.replace("│", " ").split("  ") if c.strip()]
    for n in BIG:
        assert sum(c.strip() == n for c in cells) == 3, (n, out)
    assert "…" not in out
    assert out.count("sleeping") == 3 and out.count("row2") >= 1


def test_run_summary_at_80_columns_keeps_every_number(guest_asm):
    m = Machine(arch="riscv64", cpus=2)
    r = m.load(guest_asm / "riscv" / "threads.S").run()
    f = io.StringIO()
    print_run_summary(r, m.kernel, console=FitConsole(file=f, width=80, highlight=False, soft_wrap=True))
    out = f.getvalue()
    assert "…" not in out
    for t in r.tasks:
        assert f"{t['utime']:,}" in out and f"{t['stime']:,}" in out
    for c in r.cpus:
        assert f"{c['cycles']:,}" in out and f"{c['sys_cycles']:,}" in out
