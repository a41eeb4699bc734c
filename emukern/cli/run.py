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
    r = sub.add_parser("run", help="run a guest program (.S source, or a static or dynamic ELF)",
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
    source = host_stdin_source(a.stdin) if echo else None
    if source == "file":
        m.config.stdin = _read_all(0)     # a redirected file: all of it, seekable, as --stdin FILE
    m.load(a.program, a.args)
    warn_other_arch_options(a, m.config.arch)
    if echo:
        attach_host_stdio(m, a.stdin, source)
    return m


def host_stdin_source(option: str | None) -> str | None:
    """Whether the guest's fd 0 is the host's own input, and how it is read: "file" (a redirected
    regular file, read whole), "stream" (a pipe, a socket or, with ``--stdin -``, a terminal:
    read as the guest asks) or None (``--stdin FILE``, ``--stdin none``, or a terminal / no input
    by default: /dev/null).  As qemu-user passes the host's fd 0 through, a pipe or file feeds the
    guest; a terminal does not unless asked, so a guest never waits on a tty in a script.  When
    this process's sys.stdin is not its real one (pytest, a script calling main()), never."""
    if option not in (None, "-"):
        return None
    if sys.stdin is None or sys.stdin is not sys.__stdin__:
        return None
    from emukern.kernel.syscalls.stat import host_stdio_kind
    kind = host_stdio_kind(0)
    if kind == "file":
        return "file"
    if kind in ("fifo", "sock") or (option == "-" and kind in ("tty", "chr")):
        return "stream"
    return None


def _read_all(fd: int) -> bytes:
    parts = []
    while True:
        try:
            chunk = os.read(fd, 1 << 20)
        except InterruptedError:
            continue
        except OSError as exc:
            raise ConfigError(f"cannot read the standard input: {exc.strerror}") from None
        if not chunk:
            return b"".join(parts)
        parts.append(chunk)


def attach_host_stdio(m: Any, stdin_path: str | None, source: str | None = None) -> None:
    """Make the guest's fds 1 and 2 the host's own (a pipe is a FIFO, a file a regular file, a
    terminal a tty, /dev/null the null device; output written straight to it, a host error the
    guest's errno), when this process's sys.stdout/sys.stderr are its real ones.  Output
    captured in Python (pytest's capsys, main() called from a script with sys.stdout replaced)
    keeps the capture buffer, which looks like a terminal, so recorded figures stay as they
    were.  fd 0 reads ``--stdin``'s bytes and is described as that file; or, ``source`` given
    (:func:`host_stdin_source`), is the host's own fd 0; or is /dev/null (which it behaves like)."""
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
    if isinstance(f0, StdinFile) and source is not None:
        f0.host_fd = 0
        if source == "stream":
            from emukern.kernel.syscalls.stat import host_stdio_kind
            f0.source, f0.source_is_tty = 0, host_stdio_kind(0) == "tty"
    elif isinstance(f0, StdinFile) and isinstance(f1, OutputFile) and f1.host_fd is not None:
        path = stdin_path if stdin_path and stdin_path not in ("-", "none") else os.devnull
        try:
            f0.host_fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            pass


def exec_root_hint(k: Any, program: str, root: str | None) -> str | None:
    """One line on stderr when a guest's execve failed with ENOENT on a path that exists on the
    host: the guest sees only its root (empty by default), so a program that runs a sibling
    (`vlset ./rdvl-sve`, a test runner, a script) needs --root.  The guest's errno is its own;
    this only explains it.  Returns the line (None: nothing to say)."""
    for path in getattr(k, "exec_enoent", []):
        # (base, host path): an absolute path as it is; a relative one from here or the program's folder
        bases = [Path("/")] if path.startswith("/") else [Path.cwd(), Path(program).resolve().parent]
        where = next((b for b in bases if (b / path).exists()), None)
        if where is None:
            continue
        if root:
            line = (f"emukern: hint: the guest's exec of {path} failed (ENOENT): it exists on the host "
                    f"but not inside --root {root}, where the guest looks")
        else:
            line = (f"emukern: hint: the guest's exec of {path} failed (ENOENT): it exists on the host, but "
                    f"the guest sees only its root (empty by default); give --root DIR, e.g. --root {where}")
        print(line, file=sys.stderr, flush=True)
        return line
    return None


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
    exec_root_hint(m.kernel, str(a.program), getattr(a, "root", None))
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
