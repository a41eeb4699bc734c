"""Crash isolation: run the emulation in a forked child and report a native death clearly.

Unicorn is C (QEMU inside): an assertion or a fault there kills the whole process, with no
summary and no JSON.  Known cases are refused before they reach the translator (scan-on-execute,
:mod:`emukern.machine.cpu_base`); this is the fallback for unknown ones.  The parent only
waits: the child inherits stdin/stdout/stderr and does all the work, so output, exit status and
files are exactly those of an unsupervised run.  If the child dies of a signal, the parent says
so (and writes the ``--json`` file the child could not) and returns 70, the internal-error code.
Only the real CLI is supervised: when Python code calls ``main()`` with ``sys.stdout`` replaced
(captured), the run stays in-process.
"""
from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

EXIT_INTERNAL = 70


def _signame(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def _flush_std() -> None:
    """Flush stdout and stderr (either may be None: a process started without them)."""
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()


def run_supervised(work: Callable[[], int], *, what: str, json_path: str | None = None) -> int:
    """Run ``work()`` in a forked child; its return value is the exit status."""
    if not hasattr(os, "fork") or os.environ.get("EMUKERN_NO_FORK"):
        return work()
    if sys.stdout is not sys.__stdout__ or sys.stderr is not sys.__stderr__:
        # output is captured in this process (main() called from Python, e.g. under pytest's
        # capsys): a child's writes would be lost, so run in-process
        return work()
    _flush_std()
    pid = os.fork()
    if pid == 0:                      # the child: the real run
        rc = EXIT_INTERNAL
        try:
            rc = work()
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else EXIT_INTERNAL
        except BaseException as exc:  # noqa: BLE001 - the parent's main() is not on this stack
            from emukern.errors import EmukernError
            if isinstance(exc, EmukernError):
                print(f"emukern: error: {exc.message}", file=sys.stderr)
                if exc.hint:
                    print(f"  hint: {exc.hint}", file=sys.stderr)
                rc = 2
            elif isinstance(exc, KeyboardInterrupt):
                rc = 130
            else:
                print(f"emukern: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
                print("  hint: this is a bug in emukern; rerun with EMUKERN_DEBUG=1 for a traceback "
                      "and report it", file=sys.stderr)
                if os.environ.get("EMUKERN_DEBUG"):
                    import traceback
                    traceback.print_exc()
        finally:
            _flush_std()
            os._exit(rc if isinstance(rc, int) and 0 <= rc < 256 else EXIT_INTERNAL)
    # The child is in the same process group, so a Ctrl-C reaches it and it reports it itself
    # (exit 130).  The parent only waits: it ignores SIGINT meanwhile, because a
    # KeyboardInterrupt raised just after waitpid reaped the child would lose its status and
    # the retried waitpid would fail with ECHILD (an "internal error" instead of the exit 130).
    old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        _, status = os.waitpid(pid, 0)
    finally:
        signal.signal(signal.SIGINT, old_int)
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    sig = os.WTERMSIG(status)
    name = _signame(sig)
    print(f"emukern: internal error: the emulator died of {name} while running {what} "
          f"(a native crash inside Unicorn/QEMU; the guest's output above is all it produced)",
          file=sys.stderr)
    print("  hint: this is a bug in emukern (an instruction or state Unicorn cannot handle reached it); "
          "report it with the program; tools/fuzz_insn.py finds instruction words that do this",
          file=sys.stderr)
    if json_path:
        Path(json_path).write_text(json.dumps({"stop_reason": "host-crash", "host_signal": name,
                                               "program": what, "exit_status": EXIT_INTERNAL},
                                              indent=2, sort_keys=True) + "\n")
    return EXIT_INTERNAL
