"""SVE2 integer multiplies and multiply-accumulates of the SVE2 unit (FEAT_SVE2) that
``int_arith`` does not cover, every element size each encoding allows:

* indexed, same size: MUL, SQDMULH, SQRDMULH, MLA, MLS, SQRDMLAH, SQRDMLSH (H/S/D; the index
  picks one element of Zm inside each 128-bit segment);
* indexed, widening: SMULL{B,T}, UMULL{B,T}, SQDMULL{B,T}, SMLAL{B,T}, UMLAL{B,T}, SMLSL{B,T},
  UMLSL{B,T}, SQDMLAL{B,T}, SQDMLSL{B,T} (S from H, D from S);
* vectors: SQDMLAL{B,T}, SQDMLSL{B,T}, SQDMLALBT, SQDMLSLBT (H/S/D), SQRDMLAH, SQRDMLSH (B/H/S/D);
* absolute difference and accumulate: SABA, UABA (B/H/S/D), SABAL{B,T}, UABAL{B,T} (H/S/D).

The saturating doubling forms saturate the doubled product first and then the sum, as the Arm
ARM's pseudocode does; SVE has no sticky QC flag, so saturation leaves FPSR alone.
"""
from __future__ import annotations

from typing import Callable

from .elems import pack, sext, size, unpack, widening_sizes, zd, zm, zn
from .state import Sve2Insn, SveRegs


def _sat_s(v: int, bits: int) -> int:
    return max(-(1 << (bits - 1)), min((1 << (bits - 1)) - 1, v))


def _rdmlah(acc: int, prod2: int, bits: int) -> int:
    """(acc << bits) + doubled product, rounded to the top half and saturated: SQRDMLAH/SH."""
    return _sat_s(((acc << bits) + prod2 + (1 << (bits - 1))) >> bits, bits)


# ---- the index fields ------------------------------------------------------------------------
def _same_size_index(w: int) -> tuple[int, int, int]:
    """(element bytes, index, Zm) of the same-size indexed classes: H keeps a 3-bit index
    (bits 22, 20:19) and Z0-Z7; S a 2-bit one (20:19) and Z0-Z7; D one bit (20) and Z0-Z15."""
    if not (w >> 23) & 1:
        return 2, (((w >> 22) & 1) << 2) | ((w >> 19) & 3), (w >> 16) & 7
    if not (w >> 22) & 1:
        return 4, (w >> 19) & 3, (w >> 16) & 7
    return 8, (w >> 20) & 1, (w >> 16) & 15


def _long_index(w: int) -> tuple[int, int, int]:
    """(destination element bytes, index, Zm) of the widening indexed classes: S from H with a
    3-bit index (20:19, 11) and Z0-Z7, D from S with a 2-bit one (20, 11) and Z0-Z15."""
    lo = (w >> 11) & 1
    if not (w >> 22) & 1:
        return 4, (((w >> 19) & 3) << 1) | lo, (w >> 16) & 7
    return 8, (((w >> 20) & 1) << 1) | lo, (w >> 16) & 15


def _broadcast(m: list[int], idx: int, per_seg: int, n: int) -> list[int]:
    """For each of n elements, the element ``idx`` of its 128-bit segment of ``m``."""
    return [m[(e - e % per_seg) + idx] for e in range(n)]


# ---- same size, indexed ------------------------------------------------------------------------
Op3 = Callable[[int, int, int, int], int]          # (acc, a, b, bits) -> result


def _indexed(op: Op3, signed: bool):
    def run(w: int, r: SveRegs) -> None:
        es, idx, m = _same_size_index(w)
        bits = 8 * es
        a = unpack(r.z[zn(w)], es)
        b = _broadcast(unpack(r.z[m], es), idx, 16 // es, len(a))
        acc = unpack(r.z[zd(w)], es)
        if signed:
            a = [sext(x, bits) for x in a]
            b = [sext(x, bits) for x in b]
            acc = [sext(x, bits) for x in acc]
        r.set_z(zd(w), pack([op(c, x, y, bits) for c, x, y in zip(acc, a, b)], es))
    return run


SAME_INDEXED: list[tuple[str, int, Op3, bool]] = [
    ("mla", 0x44200800, lambda c, a, b, n: c + a * b, False),
    ("mls", 0x44200C00, lambda c, a, b, n: c - a * b, False),
    ("sqrdmlah", 0x44201000, lambda c, a, b, n: _rdmlah(c, 2 * a * b, n), True),
    ("sqrdmlsh", 0x44201400, lambda c, a, b, n: _rdmlah(c, -2 * a * b, n), True),
    ("sqdmulh", 0x4420F000, lambda c, a, b, n: _sat_s((2 * a * b) >> n, n), True),
    ("sqrdmulh", 0x4420F400, lambda c, a, b, n: _sat_s((2 * a * b + (1 << (n - 1))) >> n, n), True),
    ("mul", 0x4420F800, lambda c, a, b, n: a * b, False),
]


def _sqrdmlah_vectors(sub: bool):
    def run(w: int, r: SveRegs) -> None:
        es = 1 << size(w)
        bits = 8 * es
        a = [sext(x, bits) for x in unpack(r.z[zn(w)], es)]
        b = [sext(x, bits) for x in unpack(r.z[zm(w)], es)]
        acc = [sext(x, bits) for x in unpack(r.z[zd(w)], es)]
        sgn = -2 if sub else 2
        r.set_z(zd(w), pack([_rdmlah(c, sgn * x * y, bits) for c, x, y in zip(acc, a, b)], es))
    return run


# ---- widening ----------------------------------------------------------------------------------
def _long_op(kind: str, sub: bool) -> Callable[[int, int, int, int], int]:
    """The accumulate of a widening multiply on a destination of ``bits``: plain (wrapping),
    saturating doubling (SQDMLAL/SL, SQDMULL), or no accumulator at all (the multiplies)."""
    sgn = -1 if sub else 1
    if kind == "mul":
        return lambda c, a, b, n: a * b
    if kind == "sqdmul":
        return lambda c, a, b, n: _sat_s(2 * a * b, n)
    if kind == "mla":
        return lambda c, a, b, n: c + sgn * a * b
    return lambda c, a, b, n: _sat_s(c + sgn * _sat_s(2 * a * b, n), n)       # sqdmla


def _long_indexed(op, signed: bool, top: bool):
    def run(w: int, r: SveRegs) -> None:
        des, idx, m = _long_index(w)
        es = des // 2
        bits = 8 * es
        n_el = r.vl // des
        a = unpack(r.z[zn(w)], es)[int(top)::2]
        src_m = unpack(r.z[m], es)
        per_seg = 16 // des
        b = [src_m[2 * (e - e % per_seg) + idx] for e in range(n_el)]
        acc = unpack(r.z[zd(w)], des)
        if signed:
            a = [sext(x, bits) for x in a]
            b = [sext(x, bits) for x in b]
            acc = [sext(x, 2 * bits) for x in acc]
        r.set_z(zd(w), pack([op(c, x, y, 2 * bits) for c, x, y in zip(acc, a, b)], des))
    return run


# (name, value with B/T clear, kind, signed, subtract); bit 10 is T in every one of them
LONG_INDEXED: list[tuple[str, int, str, bool, bool]] = [
    ("sqdmlal", 0x44A02000, "sqdmla", True, False),
    ("sqdmlsl", 0x44A03000, "sqdmla", True, True),
    ("smlal", 0x44A08000, "mla", True, False),
    ("umlal", 0x44A09000, "mla", False, False),
    ("smlsl", 0x44A0A000, "mla", True, True),
    ("umlsl", 0x44A0B000, "mla", False, True),
    ("smull", 0x44A0C000, "mul", True, False),
    ("umull", 0x44A0D000, "mul", False, False),
    ("sqdmull", 0x44A0E000, "sqdmul", True, False),
]


def _long_vectors(op, sel_n: int, sel_m: int):
    """Zda (2*esize) = op(Zda, Zn[2e+sel_n], Zm[2e+sel_m]), all signed (the saturating doubling
    multiply-add long class and its interleaved BT forms)."""
    def run(w: int, r: SveRegs) -> None:
        des, es, bits = widening_sizes(w, "saturating multiply-add long")
        a = [sext(x, bits) for x in unpack(r.z[zn(w)], es)[sel_n::2]]
        b = [sext(x, bits) for x in unpack(r.z[zm(w)], es)[sel_m::2]]
        acc = [sext(x, 2 * bits) for x in unpack(r.z[zd(w)], des)]
        r.set_z(zd(w), pack([op(c, x, y, 2 * bits) for c, x, y in zip(acc, a, b)], des))
    return run


# ---- absolute difference and accumulate -----------------------------------------------------------
def _aba(signed: bool):
    def run(w: int, r: SveRegs) -> None:
        es = 1 << size(w)
        bits = 8 * es
        a = unpack(r.z[zn(w)], es)
        b = unpack(r.z[zm(w)], es)
        if signed:
            a = [sext(x, bits) for x in a]
            b = [sext(x, bits) for x in b]
        acc = unpack(r.z[zd(w)], es)
        r.set_z(zd(w), pack([c + abs(x - y) for c, x, y in zip(acc, a, b)], es))
    return run


def _abal(signed: bool, top: bool):
    def run(w: int, r: SveRegs) -> None:
        des, es, bits = widening_sizes(w, "sabal/uabal")
        a = unpack(r.z[zn(w)], es)[int(top)::2]
        b = unpack(r.z[zm(w)], es)[int(top)::2]
        if signed:
            a = [sext(x, bits) for x in a]
            b = [sext(x, bits) for x in b]
        acc = unpack(r.z[zd(w)], des)
        r.set_z(zd(w), pack([c + abs(x - y) for c, x, y in zip(acc, a, b)], des))
    return run


INSNS: tuple[Sve2Insn, ...] = (
    # same size indexed: 01000100 1 size 1 ... opc Zn Zd (bit 21 = 1); H uses bit 22 as index
    *(Sve2Insn(f"{name}.idx", 0xFF20FC00, value, "sve2", _indexed(op, sg))
      for name, value, op, sg in SAME_INDEXED),
    Sve2Insn("sqrdmlah", 0xFF20FC00, 0x44007000, "sve2", _sqrdmlah_vectors(False)),
    Sve2Insn("sqrdmlsh", 0xFF20FC00, 0x44007400, "sve2", _sqrdmlah_vectors(True)),
    *(Sve2Insn(f"{name}{'bt'[t]}.idx", 0xFFA0F400, value | (t << 10), "sve2",
               _long_indexed(_long_op(kind, sub), sg, bool(t)))
      for name, value, kind, sg, sub in LONG_INDEXED for t in (0, 1)),
    *(Sve2Insn(f"{name}{'bt'[t]}", 0xFF20FC00, value | (t << 10), "sve2",
               _long_vectors(_long_op("sqdmla", sub), t, t))
      for name, value, sub in (("sqdmlal", 0x44006000, False), ("sqdmlsl", 0x44006800, True))
      for t in (0, 1)),
    Sve2Insn("sqdmlalbt", 0xFF20FC00, 0x44000800, "sve2", _long_vectors(_long_op("sqdmla", False), 0, 1)),
    Sve2Insn("sqdmlslbt", 0xFF20FC00, 0x44000C00, "sve2", _long_vectors(_long_op("sqdmla", True), 0, 1)),
    Sve2Insn("saba", 0xFF20FC00, 0x4500F800, "sve2", _aba(True)),
    Sve2Insn("uaba", 0xFF20FC00, 0x4500FC00, "sve2", _aba(False)),
    *(Sve2Insn(f"{name}{'bt'[t]}", 0xFF20FC00, value | (t << 10), "sve2", _abal(sg, bool(t)))
      for name, value, sg in (("sabal", 0x4500C000, True), ("uabal", 0x4500C800, False))
      for t in (0, 1)),
)
