"""The interactive front end of ``emukern debug``: a prompt_toolkit REPL (history, completion of
commands and ELF symbols) or, with ``--script FILE`` / ``--ex CMD`` / a non-terminal stdin, the
same commands run one after the other with each command echoed before its output.

Output is rich markup: coloured on a terminal, plain text otherwise.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Iterable, TextIO

from rich.console import Console

from emukern.debug.commands import Session, completion_words
from emukern.debug.engine import Debugger
from emukern.debug.views import location_line

PROMPT = "(emukern) "


class GuestEcho:
    """A binary sink for the guest's stdout/stderr that keeps order with the debugger's output."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, data: bytes) -> int:
        self.stream.write(bytes(data).decode("utf-8", "replace"))
        self.stream.flush()
        return len(data)

    def flush(self) -> None:
        self.stream.flush()


def make_console(stream: TextIO | None = None) -> Console:
    stream = stream if stream is not None else sys.stdout
    tty = hasattr(stream, "isatty") and stream.isatty() and not os.environ.get("NO_COLOR")
    if tty:
        return Console(file=stream, highlight=False, soft_wrap=True)
    return Console(file=stream, highlight=False, soft_wrap=True, no_color=True, force_terminal=False,
                   color_system=None, width=1000)


class Repl:
    def __init__(self, dbg: Debugger, console: Console) -> None:
        self.console = console
        self.session = Session(dbg, self._print)

    def _print(self, line: str) -> None:
        self.console.print(line)

    def banner(self) -> None:
        d = self.session.dbg
        prog = getattr(d.m, "program", None)
        self.console.print(f"emukern debugger: {d.arch}, {len(d.k.cpus)} cpu(s), program "
                           f"{getattr(d.m, 'argv', [prog])[0]}. `help` lists the commands.", markup=False)
        if d.task() is not None:
            self._print(location_line(d))

    # ---- non-interactive -----------------------------------------------------------------------------
    def run_lines(self, lines: Iterable[str], echo: bool = True) -> int:
        """Run commands in order, echoing each one; returns 0, or 1 if any command failed."""
        failed = False
        for raw in lines:
            line = raw.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if echo:
                self.console.print(PROMPT + line, markup=False, highlight=False)
            if not self.session.execute(line):
                failed = True
            if self.session.quit_requested:
                break
        return 1 if failed else 0

    # ---- interactive -------------------------------------------------------------------------------------
    def interactive(self) -> int:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.completion import Completer, Completion
        from prompt_toolkit.history import FileHistory, InMemoryHistory

        session = self.session

        class _Completer(Completer):
            def get_completions(self, document: Any, complete_event: Any) -> Any:
                text = document.text_before_cursor
                words = text.split()
                if text and not text[-1].isspace() and words:
                    cur = words.pop()
                else:
                    cur = ""
                try:
                    cands = completion_words(session, words)
                except Exception:  # noqa: BLE001 - completion must never break the line being edited
                    cands = []
                for c in cands:
                    if c.startswith(cur):
                        yield Completion(c, start_position=-len(cur))

        history: Any
        try:
            hdir = Path(os.environ.get("EMUKERN_CACHE") or Path.home() / ".cache" / "emukern")
            hdir.mkdir(parents=True, exist_ok=True)
            history = FileHistory(str(hdir / "debug_history"))
        except OSError:
            history = InMemoryHistory()
        ps: Any = PromptSession(history=history, completer=_Completer(), complete_while_typing=False)
        last = ""
        while not session.quit_requested:
            try:
                line = ps.prompt(PROMPT)
            except KeyboardInterrupt:
                continue
            except EOFError:
                self.console.print("quit", markup=False)
                break
            if not line.strip() and last in ("stepi", "si", "step", "s", "next", "n", "continue", "c"):
                line = last             # gdb: an empty line repeats a stepping command
            if line.strip():
                last = line.strip()
            session.execute(line)
        return 0


def run_debugger(dbg: Debugger, *, script: str | None = None, commands: list[str] | None = None,
                 console: Console | None = None, batch: bool = False) -> int:
    console = console or make_console()
    repl = Repl(dbg, console)
    repl.banner()
    status = 0
    if commands:
        status |= repl.run_lines(commands)
    if script is not None:
        try:
            text = sys.stdin.read() if script == "-" else Path(script).read_text()
        except OSError as exc:
            from emukern.errors import ConfigError
            raise ConfigError(f"cannot read --script file {script}: {exc.strerror}") from None
        status |= repl.run_lines(text.splitlines())
        return status
    if batch or commands and repl.session.quit_requested:
        return status
    if repl.session.quit_requested:
        return status
    if not sys.stdin.isatty():
        return status | repl.run_lines(sys.stdin)
    return status | repl.interactive()
