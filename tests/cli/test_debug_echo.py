"""The debugger's `set echo off|on` (emukern/debug/commands.py Session.stop, engine.py echo_traps):
off, `continue` stops without listing every trap it handled, only how many; `step` still shows
its own; on brings the list back."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "debug"))
from debug_testutil import ARM, debug_script, section  # noqa: E402,F401  (debug_script: a fixture)


def _handled(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.lstrip().startswith("handled"))


def test_continue_lists_handled_traps_by_default(debug_script):
    rc, out = debug_script(ARM, ["continue"])
    assert rc == 0
    assert _handled(section(out, "continue")) >= 2


def test_set_echo_off_counts_instead(debug_script):
    rc, out = debug_script(ARM, ["set echo off", "continue"])
    assert rc == 0
    assert "echo of handled traps: off" in section(out, "set echo off")
    stop = section(out, "continue")
    assert _handled(stop) == 0
    assert "traps handled; `set echo on` lists them" in stop


def test_set_echo_on_again_and_bad_value(debug_script):
    rc, out = debug_script(ARM, ["set echo off", "set echo on", "continue", "set echo loud"])
    assert _handled(section(out, "continue")) >= 2
    assert "usage: set echo on|off" in section(out, "set echo loud")


def test_step_still_shows_its_trap_with_echo_off(debug_script):
    rc, out = debug_script(ARM, ["set echo off", "break trap syscall", "continue", "finish"])
    fin = section(out, "finish")
    assert "decision" in fin
