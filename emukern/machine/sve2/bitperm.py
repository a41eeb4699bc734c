"""SVE2 bit permutation instructions (FEAT_SVE_BitPerm, ID_AA64ZFR0_EL1.BitPerm): BDEP, BEXT,
BGRP, unpredicated, every element size (B/H/S/D)."""
from __future__ import annotations

from .elems import pack, size, unpack, zd, zm, zn
from .state import Sve2Insn, SveRegs


def bext(v: int, mask: int, bits: int) -> int:
    """The bits of ``v`` where ``mask`` is set, packed towards bit 0."""
    out, k = 0, 0
    for i in range(bits):
        if (mask >> i) & 1:
            out |= ((v >> i) & 1) << k
            k += 1
    return out


def bdep(v: int, mask: int, bits: int) -> int:
    """The low bits of ``v`` scattered, in order, to where ``mask`` is set."""
    out, k = 0, 0
    for i in range(bits):
        if (mask >> i) & 1:
            out |= ((v >> k) & 1) << i
            k += 1
    return out


def bgrp(v: int, mask: int, bits: int) -> int:
    """The bits of ``v`` where ``mask`` is set packed at the bottom, the others above them."""
    ones = bin(mask).count("1")
    return bext(v, mask, bits) | (bext(v, ~mask & ((1 << bits) - 1), bits) << ones)


def _op(fn):
    def run(w: int, r: SveRegs) -> None:
        es = 1 << size(w)
        bits = 8 * es
        a = unpack(r.z[zn(w)], es)
        m = unpack(r.z[zm(w)], es)
        r.set_z(zd(w), pack([fn(x, y, bits) for x, y in zip(a, m)], es))
    return run


INSNS: tuple[Sve2Insn, ...] = (
    Sve2Insn("bext", 0xFF20FC00, 0x4500B000, "svebitperm", _op(bext)),
    Sve2Insn("bdep", 0xFF20FC00, 0x4500B400, "svebitperm", _op(bdep)),
    Sve2Insn("bgrp", 0xFF20FC00, 0x4500B800, "svebitperm", _op(bgrp)),
)
