"""The debugger's signal commands: `break signal [NAME]` stops on the handler's first instruction
after the kernel built the frame; `info signals` shows actions, masks, pending sets and the
alternate stack; the trap history carries the delivery and rt_sigreturn lines."""
from __future__ import annotations

from pathlib import Path

import pytest

from emukern.cli import main
from emukern.pytest_plugin import GUEST_ASM

PROG = str(GUEST_ASM / "riscv" / "sig_vstate.S")


@pytest.fixture
def script(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    def run(commands: list[str], *options: str) -> tuple[int, str]:
        f = tmp_path / "cmds.txt"
        f.write_text("\n".join(commands) + "\n")
        capsys.readouterr()
        rc = main(["debug", PROG, *options, "--script", str(f)])
        cap = capsys.readouterr()
        return rc, cap.out + cap.err
    return run


def _section(out: str, command: str) -> str:
    marker = f"(emukern) {command}\n"
    i = out.index(marker) + len(marker)
    j = out.find("(emukern) ", i)
    return out[i:] if j < 0 else out[i:j]


def test_break_signal_and_info_signals(script):
    rc, out = script(["info signals", "break signal usr1", "continue", "info signals", "info regs pc a0",
                      "traps", "continue"])
    assert rc == 0
    before = _section(out, "info signals")
    assert "every signal SIG_DFL" in before and "blocked:  -" in before
    assert "Signal breakpoint 1: SIGUSR1" in out
    stop = _section(out, "continue")
    assert "Signal breakpoint 1: SIGUSR1 (si_code 0) delivered to tid 1" in stop
    assert "<handler>" in stop
    # at the handler: SIGUSR1 is blocked while it runs, the action is shown by symbol
    now = out.split("(emukern) info signals\n")[2].split("(emukern)")[0]
    assert "blocked:  SIGUSR1" in now and "1 delivered, 0 rt_sigreturn" in now
    assert "SIGUSR1" in now and "<handler>" in now and "flags=0x4" in now
    regs = _section(out, "info regs pc a0")
    assert "<handler>" in regs and "0x000000000000000a" in regs
    assert "deliver SIGUSR1" in _section(out, "traps")
    assert "rt_sigreturn: frame at" in out.split("(emukern) continue\n")[-1]


def test_break_signal_rejects_unknown_names(script):
    rc, out = script(["break signal SIGNOPE"])
    assert "unknown signal 'SIGNOPE'" in out


def test_break_any_signal_does_not_fire_without_signals(tmp_path, capsys):
    f = tmp_path / "cmds.txt"
    f.write_text("break signal\ncontinue\n")
    rc = main(["debug", str(GUEST_ASM / "riscv" / "hello.S"), "--script", str(f)])
    out = capsys.readouterr().out
    assert rc == 0 and "program exited with status 0" in out and "Signal breakpoint 1:" in out
    assert "delivered to" not in out
