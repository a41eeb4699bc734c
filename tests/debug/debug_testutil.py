"""Helpers for the debugger tests: run `emukern debug PROG --script FILE` in-process."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

import pytest

DATA = Path(__file__).resolve().parent / "data"
REPO = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Za-z0-9]|\x1b[=>]|\r")

RV = str(DATA / "rv_vector.S")
ARM = str(DATA / "arm64_traps.S")


def strip_ansi(text: str) -> str:
    return ANSI.sub("", text)


@pytest.fixture
def debug_script(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str]]:
    """debug_script(prog, [commands], *options) -> (exit status, everything printed)."""
    def run(prog: str, commands: list[str], *options: str) -> tuple[int, str]:
        from emukern.cli import main
        script = tmp_path / "cmds.txt"
        script.write_text("\n".join(commands) + "\n")
        capsys.readouterr()
        rc = main(["debug", prog, *options, "--script", str(script)])
        cap = capsys.readouterr()
        return rc, cap.out + cap.err
    return run


def section(out: str, command: str) -> str:
    """The output of one echoed command (up to the next prompt)."""
    marker = f"(emukern) {command}\n"
    i = out.index(marker) + len(marker)
    j = out.find("(emukern) ", i)
    return out[i:] if j < 0 else out[i:j]
