"""`emukern COMMAND [OPTS] -- PROG [ARGS...]` as well as `emukern COMMAND [OPTS] PROG [ARGS] [-- ARGS]`,
for every command that runs a program (run, debug, gdbserver, linux, compare); and help texts
that speak to users, not to the issue tracker."""
from __future__ import annotations

import re

import pytest

from emukern.cli import main, make_parser, parse_command_line

COMMANDS = {"run": ["--cpus", "2"], "debug": ["--ex", "continue"], "gdbserver": ["--port", "0"],
            "linux": ["--timeout", "2"], "compare": ["--timeout", "2"]}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("form", ["program-first", "options-first", "all-after-dashes"])
def test_program_before_or_after_the_dashes(command: str, form: str) -> None:
    opts = COMMANDS[command]
    argv = {"program-first": [command, "p.S", "a", *opts, "--", "-x", "--cpus"],
            "options-first": [command, *opts, "p.S", "a", "--", "-x", "--cpus"],
            "all-after-dashes": [command, *opts, "--", "p.S", "a", "-x", "--cpus"]}[form]
    a = parse_command_line(make_parser(), argv)
    assert a.command == command and a.program == "p.S" and a.args == ["a", "-x", "--cpus"]
    assert getattr(a, opts[0].lstrip("-").replace("-", "_")) not in (None, [])


def test_a_program_after_the_dashes_may_look_like_an_option() -> None:
    a = parse_command_line(make_parser(), ["run", "--", "--weird.S", "--cpus", "9"])
    assert a.program == "--weird.S" and a.args == ["--cpus", "9"] and a.cpus == 1


@pytest.mark.parametrize("argv", [["run"], ["run", "--"], ["run", "--cpus", "2", "--"]])
def test_no_program_at_all_is_still_a_usage_error(argv: list[str], capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert "required: program" in capsys.readouterr().err


def test_dashes_on_a_command_without_a_program_is_still_refused(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["info", "--", "policies"])
    assert exc.value.code == 2 and "unrecognized arguments: -- policies" in capsys.readouterr().err


ARGC = "# arch: riscv64\n.globl _start\n_start:\n    ld a0, 0(sp)\n    li a7, 93\n    ecall\n"


@pytest.mark.parametrize("argv,argc", [
    (["run", "-q", "PROG", "a", "--", "--cpus", "2"], 4),          # PROG [ARGS] -- ARGS
    (["run", "-q", "--vlen", "512", "--", "PROG", "-q", "b"], 3),  # OPTS -- PROG ARGS
    (["run", "-q", "--", "PROG"], 1),
])
def test_run_both_forms(tmp_path, capsys, argv: list[str], argc: int) -> None:
    prog = tmp_path / "argc.S"
    prog.write_text(ARGC)
    assert main([str(prog) if w == "PROG" else w for w in argv]) == argc     # exit status = argc
    assert capsys.readouterr().err == ""


def test_help_texts_name_no_issue_numbers() -> None:
    parser = make_parser()
    texts = [parser.format_help()]
    for action in parser._actions:
        for sp in getattr(action, "choices", None) or {}:
            if hasattr(action.choices[sp], "format_help"):
                texts.append(action.choices[sp].format_help())
    assert len(texts) > 8
    hits = [m.group(0) for t in texts for m in re.finditer(r"[Ii]ssues? #?\d+", t)]
    assert not hits
    bench = next(t for t in texts if t.startswith("usage: emukern bench"))
    assert "met or MISSED" in bench
