"""emukern's command line.  `emukern --help` and `emukern COMMAND --help` teach the rest.

One module per command: run, info, bench (bench and reproduce), selftests, sweep, oracle (linux
and compare), debug (debug and gdbserver).  The machine options they share, and the MachineConfig
built from them, are :mod:`emukern.options`, one layer down.  This package is the top of the
import graph: no module outside it imports it (tests/foundation/test_cli_layers.py).
"""
from __future__ import annotations

import os
import sys

TYPE_CHECKING = False                # (not typing's: a run handed to a warm worker never loads typing)
if TYPE_CHECKING:
    import argparse
    from typing import Any, Sequence

__all__ = ["main", "make_parser", "apply_kconfig", "config_from_args", "machine_options", "KCONFIG",
           "warn_other_arch_options", "build_machine", "check_output_file", "print_examples"]

# the names tests and scripts import from emukern.cli, and the module each comes from: loaded on
# first use (PEP 562), so that a run handed to a warm worker (EMUKERN_WARM) loads none of them
_REEXPORTS = {"print_examples": "emukern.cli.info", "build_machine": "emukern.cli.run",
              "check_output_file": "emukern.cli.run", "KCONFIG": "emukern.options",
              "apply_kconfig": "emukern.options", "config_from_args": "emukern.options",
              "machine_options": "emukern.options", "warn_other_arch_options": "emukern.options"}


def __getattr__(name: str) -> Any:
    if name in _REEXPORTS:
        import importlib
        value = getattr(importlib.import_module(_REEXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

DESCRIPTION = """\
emukern runs real RISC-V (RV64GCV) and AArch64 (with SVE) Linux user programs inside Unicorn,
at user privilege, and takes every trap into a Python model of the Linux kernel. Instruction
counts are the clock, so every figure is deterministic.

The kernel models four real Linux changes, each switchable with --policy (and at run time
with the debugger's `policy NAME VALUE`; your own values: --plugin FILE.py):
  riscv-vstate-sysctl=absent|present  "riscv: Add sysctl to control discard of vstate during
                                      syscall" (Drew Fustini, 2025-07-18)
  riscv-discard=eager|deferred        "riscv: vector: treat VS_INITIAL as discard"
                                      (Andy Chiu, 2026-04-01)
     |optimize-restore                its successor "riscv: optimize Vector context restore
                                      on syscall" (Andy Chiu, v3/v4, 2026-05)
  arm64-mrs=hook-list|direct          "arm64: rework EL0 MRS emulation" (Mark Rutland; v5.10
                                      backport by Jinjie Ruan, 2023-10-11)
  arm64-sve=legacy|p1|p1+p2           "arm64/sve: Performance improvements with SVE state
                                      saving" (Mark Brown, v11, 2026)
  (message ids: `emukern info policies`)

examples:
  emukern run guest_asm/riscv/hello.S
  emukern run guest_asm/riscv/null_syscall.S --vlen 512 --sysctl abi.riscv_v_vstate_discard=1
  emukern run prog.elf --cpus 4 --policy arm64-mrs=hook-list --json out.json
  emukern reproduce            # every experiment, with the published figures beside ours
  emukern info policies        # switches, costs, sysctls
"""


# each command's module and the function that adds its subparser(s), in --help order; the
# commands an adder defines (debug adds gdbserver, oracle adds linux and compare)
_COMMANDS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("run",), "emukern.cli.run", "add_run_command"),
    (("info",), "emukern.cli.info", "add_info_command"),
    (("reproduce",), "emukern.cli.bench", "add_reproduce_command"),
    (("bench",), "emukern.cli.bench", "add_bench_command"),
    (("sweep",), "emukern.cli.sweep", "add_sweep_command"),
    (("selftests",), "emukern.cli.selftests", "add_selftests_command"),
    (("linux", "compare"), "emukern.cli.oracle", "add_oracle_commands"),
    (("debug", "gdbserver"), "emukern.cli.debug", "add_debug_commands"),
    (("serve",), "emukern.cli.serve", "add_serve_command"),
)


def make_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with ``command`` (a command's name, e.g. "run"), only that
    command's subparser.  A run parses its own options and nothing else: building every
    command's parser (and importing what their --help texts list, such as the selftest
    catalogue) is a good part of a short run's start-up.  The result parses that command's
    words exactly as the whole parser does; any other word gets the whole parser."""
    import argparse
    import importlib
    p = argparse.ArgumentParser(prog="emukern", description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    from emukern import __version__
    p.add_argument("--version", action="version", version=f"emukern {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    known = any(command in names for names, _m, _f in _COMMANDS)
    for names, module, adder in _COMMANDS:
        if known and command not in names:
            continue
        getattr(importlib.import_module(module), adder)(sub)
    return p


def _program_may_follow_dashes(parser: argparse.ArgumentParser) -> None:
    """Make the `program` and `args` positionals of every command that has them optional
    (missing: None and []), for a command line with a `--`, after which main() finds the program."""
    import argparse
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sp in action.choices.values():
                positionals = {act.dest: act for act in sp._actions if not act.option_strings}
                if "program" in positionals and "args" in positionals:
                    positionals["program"].required = False
                    positionals["program"].default = None
                    positionals["args"].required = False
                    positionals["args"].default = []


def parse_command_line(parser: argparse.ArgumentParser, words: Sequence[str]) -> argparse.Namespace:
    """``words`` (argv[1:]) -> the namespace a command runs with.  Both ``emukern run [OPTS] PROG
    [ARGS] [-- ARGS]`` and ``emukern run [OPTS] -- PROG [ARGS...]`` (likewise debug, gdbserver,
    linux, compare): everything after the first ``--`` goes to the guest verbatim, and when no
    program came before it, the first word after it is the program."""
    words = list(words)
    guest_extra: list[str] = []
    if "--" in words:
        # `--` ends emukern's options: the rest goes to the guest verbatim.  (argparse alone
        # cannot do this once the positional `args` has been matched, so split here.)
        cut = words.index("--")
        words, guest_extra = words[:cut], words[cut + 1:]
    if guest_extra:
        # the program may come after the `--`: before it the program is optional
        _program_may_follow_dashes(parser)
    a = parser.parse_args(words)
    if guest_extra:
        if not hasattr(a, "args"):
            parser.error(f"unrecognized arguments: -- {' '.join(guest_extra)}")
        if getattr(a, "program", "") is None:
            a.program, guest_extra = guest_extra[0], guest_extra[1:]
        a.args = list(a.args) + guest_extra
    return a


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    setting = os.environ.get("EMUKERN_WARM")
    if setting and words[:1] == ["run"] and sys.stdout is sys.__stdout__ and sys.stderr is sys.__stderr__:
        # opt-in: a warm `emukern serve` does the run (None: there is none, or it cannot give
        # this run's exact result, and the run happens here as usual)
        from emukern.cli import warm
        if not warm.IN_WORKER:
            rc = warm.run_warm(words, setting)
            if rc is not None:
                return rc
    from emukern.errors import EmukernError
    parser = make_parser(words[0] if words else None)
    a = parse_command_line(parser, words)
    if not getattr(a, "command", None):
        parser.print_help()
        return 0
    try:
        return int(a.func(a) or 0)
    except EmukernError as exc:
        print(f"emukern: error: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"  hint: {exc.hint}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("emukern: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 141
    except Exception as exc:  # noqa: BLE001 - last line of defence: no tracebacks for users
        if os.environ.get("EMUKERN_DEBUG"):
            raise
        print(f"emukern: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        print("  hint: this is a bug in emukern; rerun with EMUKERN_DEBUG=1 for a traceback and report it",
              file=sys.stderr)
        return 70
