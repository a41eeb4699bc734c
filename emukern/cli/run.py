"""`emukern run`: run a guest program and print what it did."""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from emukern.errors import ConfigError
from emukern.options import RUN_DESCRIPTION, RUN_EPILOG, add_run_arguments, config_from_args, warn_other_arch_options


def add_run_command(sub: Any) -> None:
    r = sub.add_parser("run", help="run a guest program (.S source or static ELF64)",
                       description=RUN_DESCRIPTION, epilog=RUN_EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_arguments(r)
    r.set_defaults(func=cmd_run)


def build_machine(a: argparse.Namespace, echo: bool = True) -> Any:
    from emukern.api import Machine
    cfg = config_from_args(a)
    m = Machine(cfg, echo_stdout=sys.stdout.buffer if echo else None,
                echo_stderr=sys.stderr.buffer if echo else None)
    m.explicit_arch = a.arch
    m.load(a.program, a.args)
    warn_other_arch_options(a, m.config.arch)
    if echo:
        attach_host_stdio(m, a.stdin)
    return m


def attach_host_stdio(m: Any, stdin_path: str | None) -> None:
    """Make the guest's fds 1 and 2 the host's own (a pipe is a FIFO, a file a regular file, a
    terminal a tty, /dev/null the null device; output written straight to it, a host error the
    guest's errno), when this process's sys.stdout/sys.stderr are its real ones.  Output
    captured in Python (pytest's capsys, main() called from a script with sys.stdout replaced)
    keeps the capture buffer, which looks like a terminal, so recorded figures stay as they
    were.  fd 0 reads ``--stdin``'s bytes, never the host's input: it is described as that file,
    or as /dev/null (which it behaves like) when there is none."""
    from emukern.kernel.files import OutputFile, StdinFile
    k = m.kernel
    files = k.init_task.files
    for fd, stream, real in ((1, sys.stdout, sys.__stdout__), (2, sys.stderr, sys.__stderr__)):
        f = files.get(fd)
        if real is None or stream is not real or not isinstance(f, OutputFile):
            continue
        try:
            host = real.fileno()
        except (OSError, ValueError, AttributeError):
            continue                 # no real descriptor behind it: keep the capture
        real.flush()
        f.host_fd = host
    f0, f1 = files.get(0), files.get(1)
    if isinstance(f0, StdinFile) and isinstance(f1, OutputFile) and f1.host_fd is not None:
        try:
            f0.host_fd = os.open(stdin_path if stdin_path else os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            pass


def check_output_file(path: str, option: str) -> None:
    """A file the run will write must be writable *before* the guest runs, so a typo in the
    path is a usage error at once, not a failure after a long run."""
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        raise ConfigError(f"{option} {path}: is a directory", hint=f"give a file name, e.g. {option} out.json")
    if not parent.is_dir():
        raise ConfigError(f"{option} {path}: directory {parent} does not exist",
                          hint=f"create it first (mkdir -p {parent}) or pick another path")
    if not os.access(parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise ConfigError(f"{option} {path}: not writable", hint="pick a path you can write")


def cmd_run(a: argparse.Namespace) -> int:
    if a.json:
        check_output_file(a.json, "--json")
    from emukern.machine.supervise import run_supervised
    # a native crash inside Unicorn still ends in a report (and the --json file)
    return run_supervised(lambda: _run(a), what=str(a.program), json_path=a.json)


def _run(a: argparse.Namespace) -> int:
    m = build_machine(a)
    sys.stdout.flush()
    r = m.run()
    if a.json:
        Path(a.json).write_text(json.dumps(r.to_json(), indent=2, sort_keys=True) + "\n")
    # (the report module, rich's tables, is imported only when something is printed: -q runs
    # start faster)
    if not a.quiet:
        from emukern.report import print_run_summary
        print_run_summary(r, m.kernel, trace=a.trace)
    elif a.trace == "traps":
        from emukern.report import print_trap_trace
        print_trap_trace(m.kernel)         # -q drops the summary, not a trace asked for explicitly
    return r.exit_status
