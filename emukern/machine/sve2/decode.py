"""The SVE2 unit's decode table: every instruction module's ``INSNS`` in one lookup.

Modules: int_ops, int_arith and int_shift (FEAT_SVE2 integer), crypto (SVE AES/SM4/SHA3), bitperm (SVE BitPerm) and
matmul (I8MM/F32MM/F64MM/BF16, written separately).  A word is matched against the entries in
table order, first match wins; entries of a more specific mask come first where two classes
overlap (e.g. PMULLB .Q before PMULLB).  Results are cached per word.
"""
from __future__ import annotations

from functools import lru_cache
from types import ModuleType

from . import bitperm, crypto, int_arith, int_ops, int_shift, matmul
from . import int_complex, int_mac, int_misc2, int_narrow  # the SVE2 integer remainder
from . import fp2, mem2, perm2  # permutes, memory, floating point (second half)
from .state import Sve2Insn

MODULES: tuple[ModuleType, ...] = (int_ops, int_arith, int_shift, crypto, bitperm, matmul, int_mac, int_narrow,
                                   int_complex, int_misc2, perm2, mem2, fp2)


def collect() -> tuple[Sve2Insn, ...]:
    table: list[Sve2Insn] = []
    for mod in MODULES:
        table.extend(getattr(mod, "INSNS", ()))
    # more specific masks first, so a narrower class wins over a wider one it lies inside
    table.sort(key=lambda i: -bin(i.mask).count("1"))
    return tuple(table)


TABLE: tuple[Sve2Insn, ...] = collect()
IMPLEMENTED_FEATURES: frozenset[str] = frozenset(i.feature for i in TABLE)


@lru_cache(maxsize=4096)
def lookup(word: int) -> Sve2Insn | None:
    for insn in TABLE:
        if word & insn.mask == insn.value:
            return insn
    return None
