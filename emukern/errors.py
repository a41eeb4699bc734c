"""Errors that reach the user.

Everything a user can get wrong (a bad file, a missing tool, a bad flag) raises a subclass of
:class:`EmukernError`; the CLI prints its message and a hint, never a traceback.  Events inside
the guest (a fault, an illegal instruction) are *not* errors: they become traps and, if nobody
handles them, Linux signals.
"""
from __future__ import annotations


class EmukernError(Exception):
    """A problem the user can fix.  ``hint`` says what to do next."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"


class ElfError(EmukernError):
    """The program file cannot be loaded (malformed, wrong machine, dynamic, ...).

    ``internal`` is set when the loader itself failed unexpectedly (a bug, not a bad file) and the
    message is only the friendly wrapper around it: tests assert it stays None."""

    internal: BaseException | None = None


class AssemblerError(EmukernError):
    """Assembling a guest source failed or the assembler is missing."""


class ConfigError(EmukernError):
    """A bad machine option, sysctl, policy or cost override."""


class MemoryFault(Exception):
    """A guest access to unmapped or protected memory (becomes SIGSEGV or -EFAULT).

    ``access`` is one of ``"r"``, ``"w"``, ``"x"``.
    """

    def __init__(self, addr: int, access: str, size: int = 1) -> None:
        super().__init__(f"{access} fault at {addr:#x}")
        self.addr = addr
        self.access = access
        self.size = size


class IllegalInstruction(Exception):
    """The hardware cannot execute this instruction word (becomes an illegal-instruction trap).

    ``reason`` names the instruction or says why it is reserved, so the user sees e.g.
    ``vfadd.vv is not implemented by emukern's RVV unit``.
    """

    def __init__(self, word: int, reason: str) -> None:
        super().__init__(f"illegal instruction {word:#010x}: {reason}")
        self.word = word
        self.reason = reason
