"""Help texts say what is true and teach: `info` lists its topics, the run-like commands say
dynamic ELFs work, `info examples` describes each guest and says how to build the C ones."""
from __future__ import annotations

import pytest

from emukern.cli import main


def test_info_help_lists_every_topic(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["info", "--help"])
    out = capsys.readouterr().out
    for topic in ("policies", "costs", "sysctls", "examples", "kernels", "all"):
        assert f"  {topic}" in out


@pytest.mark.parametrize("command", ["run", "debug", "gdbserver", "compare"])
def test_run_like_help_says_dynamic_elfs_work(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "static ELF64" not in out and "dynamic" in out


def test_info_examples_describes_each_guest_and_how_to_build_c(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", "examples"]) == 0
    out = capsys.readouterr().out
    assert "riscv64-linux-gnu-gcc" in out and "aarch64-linux-gnu-gcc" in out
    hello = next(line for line in out.splitlines() if line.strip().startswith("hello.S"))
    assert "write(1, msg, len)" in hello


def test_selftests_help_has_examples_and_no_guest_input_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["selftests", "--help"])
    out = capsys.readouterr().out
    assert "examples:" in out and "emukern selftests --list" in out
    assert "--stdin" not in out                 # the selftests' guests never read the user's input
