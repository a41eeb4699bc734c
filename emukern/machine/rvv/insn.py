"""The decoded form of one vector instruction word, cached by the unit per word."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .types import ExecResult, VectorMemory, XRegs
    from .unit import RVVUnit

Handler = Callable[["RVVUnit", "Insn", "XRegs", "VectorMemory"], "ExecResult"]


class Insn:
    """Fields pulled out of the word once, plus the handler that executes it.

    ``form`` is "vv", "vx", "vi" (arithmetic), or a memory/config tag.  ``fn`` and the
    signedness flags come from :mod:`alu`.  ``reason`` is set for words the unit rejects at
    decode time; their handler just raises.
    """

    __slots__ = ("word", "name", "run", "vd", "vs1", "vs2", "rs1", "rs2", "rd", "vm", "imm",
                 "form", "fn", "a_signed", "b_signed", "eew_log2", "nregs", "kind", "reason",
                 "csr", "funct3", "ops", "swar", "spec")

    def __init__(self, word: int, name: str, run: Handler, **fields: Any) -> None:
        self.word = word
        self.name = name
        self.run = run
        self.vd = (word >> 7) & 31
        self.rd = self.vd
        self.vs1 = self.rs1 = (word >> 15) & 31
        self.vs2 = self.rs2 = (word >> 20) & 31
        self.vm = bool((word >> 25) & 1)
        self.imm = 0
        self.form = ""
        self.fn: Any = None
        self.a_signed = False
        self.b_signed = False
        self.eew_log2 = 0
        self.nregs = 1
        self.kind = "arith"
        self.reason = ""
        self.csr = 0
        self.funct3 = (word >> 12) & 7
        self.ops: tuple[str, ...] = ()
        self.swar: Any = None
        self.spec: Any = None     # widths and element function (exec_ext.Spec)
        for k, v in fields.items():
            setattr(self, k, v)
