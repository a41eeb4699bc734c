"""emukern's RVV 1.0 vector unit: a pure-Python model of the RISC-V "V" extension (integer
subset, ELEN=64) used because Unicorn has no vector support.

The CPU wrapper catches the illegal-instruction trap Unicorn raises for a vector word,
checks :func:`is_vector_insn`, and calls :meth:`RVVUnit.execute`.  Policies (tail/mask
handling, vsetvl corner cases, faults) are documented in :mod:`.unit`; costs in :mod:`.cost`.
"""
from .disasm import disasm, is_vector_insn
from .types import ExecResult, VectorMemory, XRegs
from .unit import RVVUnit

__all__ = ["RVVUnit", "VectorMemory", "XRegs", "ExecResult", "is_vector_insn", "disasm"]
