"""The interactive REPL in a pseudo-terminal (prompt_toolkit), driven with pexpect."""
from __future__ import annotations

import os
import sys

import pytest

from debug_testutil import ARM, REPO, RV, strip_ansi

pexpect = pytest.importorskip("pexpect")


def spawn(prog: str, *opts: str):
    env = dict(os.environ, PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm", EMUKERN_CACHE=os.environ.get(
        "EMUKERN_CACHE", os.path.expanduser("~/.cache/emukern")), PYTHONPATH=str(REPO))
    child = pexpect.spawn(sys.executable, ["-m", "emukern.cli", "debug", prog, *opts], cwd=str(REPO),
                          env=env, encoding="utf-8", timeout=30, dimensions=(50, 200))
    child.expect(r"\(emukern\)")
    return child


MARK = r"= 12648430 \(0xc0ffee\)"


def command(child, line: str) -> str:
    """Send a command and return its output: a `print` with a known answer marks the end (the
    terminal rendering of the prompt itself is full of cursor movements)."""
    child.sendline(line)
    child.sendline("print 0xc0ffee")
    child.expect(MARK)
    out = strip_ansi(child.before)
    child.expect(r"\(emukern\)")       # the next prompt is up (keys sent earlier could be cooked)
    return out


def test_pty_riscv_first_use_session():
    child = spawn(RV)
    try:
        assert "break trap first-use" in command(child, "help break")
        out = command(child, "break trap first-use")
        assert "Trap breakpoint 1" in out
        out = command(child, "continue")
        assert "hello" in out
        assert "riscv_v_first_use_handler" in out and "stopped before the handler" in out
        out = command(child, "finish")
        assert "decision  allocated 1024-byte context" in out
        out = command(child, "nonsense")
        assert "error: unknown command 'nonsense'" in out and "Traceback" not in out
        out = command(child, "stepi 2")
        assert "=> 0x" in out
        child.sendline("quit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0


def test_pty_arm64_traps_and_completion():
    child = spawn(ARM)
    try:
        # completion of an ELF symbol name: `break read_` + TAB -> read_id
        child.send("break read_")
        child.send("\t")
        child.expect("id")                # prompt_toolkit completes read_ -> read_id
        out = command(child, "")
        assert "Breakpoint 1 at 0x" in out and "<read_id>" in out
        out = command(child, "break trap sve-access")
        out = command(child, "continue")
        assert "Breakpoint 1, 0x" in out and "<read_id>" in out
        out = command(child, "step")
        assert "do_el0_undef" in out and "emulated MRS" in out
        out = command(child, "continue")
        assert "do_sve_acc" in out and "EC=0x19" in out
        out = command(child, "finish")
        assert "TIF_SVE set" in out
        out = command(child, "continue")
        assert "program exited with status 0" in out
        child.sendcontrol("d")          # Ctrl-D on an empty line leaves
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
