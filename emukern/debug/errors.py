"""The debugger's user-facing error: a message (and a hint), never a traceback."""
from __future__ import annotations


class DebugError(Exception):
    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
