"""Kernel.warn_on: conditions Linux WARNs about are counted per run and shown, not hidden."""
import pytest

from emukern.api import Machine
from emukern.report import print_run_summary
from rich.console import Console


@pytest.mark.warn_ok
def test_warn_on_counts_and_reports(guest_asm):
    m = Machine(arch="riscv64").load(guest_asm / "riscv" / "hello.S")
    k = m.kernel
    assert k.warn_on(False, "never") is False
    assert k.warn_on(True, "do_something: impossible state") is True
    k.warn_on(True, "do_something: impossible state")
    r = m.run()
    assert r.warnings == {"do_something: impossible state": 2}
    assert r.to_json()["warnings"] == r.warnings
    con = Console(record=True, width=200)
    print_run_summary(r, k, console=con)
    text = con.export_text()
    assert "WARN_ON" in text and "impossible state×2" in text


def test_an_ordinary_run_warns_nothing(guest_asm):
    r = Machine(arch="arm64").load(guest_asm / "arm64" / "sve_syscall.S").run()
    assert r.exit_status == 0 and r.warnings == {}
