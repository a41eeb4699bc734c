"""Interfaces between the RVV unit and the rest of the hart.

The unit never touches Unicorn directly: the CPU wrapper hands it the scalar register file
and a memory object with permission checks, both described here as protocols.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class XRegs(Protocol):
    """The hart's scalar integer registers, values unsigned 64-bit; x0 reads as 0."""

    def read(self, i: int) -> int: ...

    def write(self, i: int, value: int) -> None: ...


class VectorMemory(Protocol):
    """Guest memory as the vector unit sees it.  Both calls raise
    :class:`emukern.errors.MemoryFault` for an access the guest may not make."""

    def load(self, addr: int, size: int) -> bytes: ...

    def store(self, addr: int, data: bytes) -> None: ...


@dataclass(frozen=True, slots=True)
class ExecResult:
    """What one executed vector instruction costs and whether it changed vector state.

    ``dirty`` is True when v registers, vl, vtype, vstart, vxrm or vxsat may have been
    written (conservatively: an instruction that writes a vector register reports True even
    when vl is 0).  The CPU uses it to set ``sstatus.VS = Dirty``.  Instances are frozen
    because the unit hands out shared, cached objects.
    """

    cycles: int
    dirty: bool
