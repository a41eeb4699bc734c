"""SVE matrix multiply and BFloat16 instructions (FEAT_I8MM, FEAT_F32MM, FEAT_F64MM, FEAT_BF16).

Filled in by the matrix/bf16 work; the unit's decoder reads ``INSNS``.
"""
from __future__ import annotations

from .state import Sve2Insn

INSNS: tuple[Sve2Insn, ...] = ()
