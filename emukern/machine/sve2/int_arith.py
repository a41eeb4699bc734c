"""More SVE2 integer instructions of the SVE2 unit (FEAT_SVE2), every element size each allows:

* integer pairwise, predicated, merging: ADDP, SMAXP, UMAXP, SMINP, UMINP (B/H/S/D);
* saturating add/subtract, predicated, merging: SQADD, UQADD, SQSUB, UQSUB, SUQADD, USQADD,
  SQSUBR, UQSUBR (B/H/S/D; no sticky FPSR.QC in SVE);
* halving add/subtract, predicated, merging: SHADD, UHADD, SHSUB, UHSUB, SRHADD, URHADD, SHSUBR,
  UHSUBR (B/H/S/D);
* widening long, unpredicated, bottom/top: SADDL{B,T}, UADDL{B,T}, SSUBL{B,T}, USUBL{B,T},
  SABDL{B,T}, UABDL{B,T} (H/S/D from B/H/S);
* widening wide, unpredicated: SADDW{B,T}, UADDW{B,T}, SSUBW{B,T}, USUBW{B,T} (H/S/D);
* multiplies, unpredicated: MUL, SMULH, UMULH, SQDMULH, SQRDMULH (B/H/S/D); long SMULL{B,T},
  UMULL{B,T}, SQDMULL{B,T} (H/S/D from B/H/S); multiply-add long SMLAL{B,T}, UMLAL{B,T},
  SMLSL{B,T}, UMLSL{B,T} (H/S/D).
"""
from __future__ import annotations

from typing import Callable

from .elems import active, pack, sext, size, unpack, widening_sizes, zd, zm, zn
from .state import Sve2Insn, SveRegs

Op = Callable[[int, int, int], int]       # (a, b, bits) -> result (any int; packed modulo 2^bits)


def _predicated(op: Op, signed_a: bool, signed_b: bool):
    """Zdn = op(Zdn, Zm) where Pg is active, Zdn kept elsewhere (Pg in bits 12:10)."""
    def run(w: int, r: SveRegs) -> None:
        es = 1 << size(w)
        bits = 8 * es
        a = unpack(r.z[zd(w)], es)
        b = unpack(r.z[zn(w)], es)                  # Zm is in bits 9:5 in this class
        act = active(r.p[(w >> 10) & 7], es, len(a))
        out = list(a)
        for i, on in enumerate(act):
            if on:
                x = sext(a[i], bits) if signed_a else a[i]
                y = sext(b[i], bits) if signed_b else b[i]
                out[i] = op(x, y, bits)
        r.set_z(zd(w), pack(out, es))
    return run


def _sat_s(v: int, bits: int) -> int:
    return max(-(1 << (bits - 1)), min((1 << (bits - 1)) - 1, v))


def _sat_u(v: int, bits: int) -> int:
    return max(0, min((1 << bits) - 1, v))


SATURATING: list[tuple[str, Op, bool, bool]] = [
    ("sqadd", lambda a, b, n: _sat_s(a + b, n), True, True),
    ("uqadd", lambda a, b, n: _sat_u(a + b, n), False, False),
    ("sqsub", lambda a, b, n: _sat_s(a - b, n), True, True),
    ("uqsub", lambda a, b, n: _sat_u(a - b, n), False, False),
    ("suqadd", lambda a, b, n: _sat_s(a + b, n), True, False),
    ("usqadd", lambda a, b, n: _sat_u(a + b, n), False, True),
    ("sqsubr", lambda a, b, n: _sat_s(b - a, n), True, True),
    ("uqsubr", lambda a, b, n: _sat_u(b - a, n), False, False),
]
HALVING: list[tuple[str, Op, bool]] = [
    ("shadd", lambda a, b, n: (a + b) >> 1, True),
    ("uhadd", lambda a, b, n: (a + b) >> 1, False),
    ("shsub", lambda a, b, n: (a - b) >> 1, True),
    ("uhsub", lambda a, b, n: (a - b) >> 1, False),
    ("srhadd", lambda a, b, n: (a + b + 1) >> 1, True),
    ("urhadd", lambda a, b, n: (a + b + 1) >> 1, False),
    ("shsubr", lambda a, b, n: (b - a) >> 1, True),
    ("uhsubr", lambda a, b, n: (b - a) >> 1, False),
]


def _pairwise(op: Op, signed: bool):
    """Even result elements combine a pair of Zdn, odd ones a pair of Zm (Arm ARM ADDP)."""
    def run(w: int, r: SveRegs) -> None:
        es = 1 << size(w)
        bits = 8 * es
        a = unpack(r.z[zd(w)], es)
        b = unpack(r.z[zn(w)], es)
        act = active(r.p[(w >> 10) & 7], es, len(a))
        out = list(a)
        for e, on in enumerate(act):
            if on:
                x, y = (a[e], a[e + 1]) if e % 2 == 0 else (b[e - 1], b[e])
                if signed:
                    x, y = sext(x, bits), sext(y, bits)
                out[e] = op(x, y, bits)
        r.set_z(zd(w), pack(out, es))
    return run


PAIRWISE: list[tuple[str, int, Op, bool]] = [
    ("addp", 0x4411A000, lambda a, b, n: a + b, False),
    ("smaxp", 0x4414A000, lambda a, b, n: max(a, b), True),
    ("umaxp", 0x4415A000, lambda a, b, n: max(a, b), False),
    ("sminp", 0x4416A000, lambda a, b, n: min(a, b), True),
    ("uminp", 0x4417A000, lambda a, b, n: min(a, b), False),
]


def _widening(op: Op, signed: bool, top: bool, wide: bool):
    """Long: Zd (2*esize) = op(ext(Zn[2e+top]), ext(Zm[2e+top])); wide: op(Zn[e], ext(Zm[2e+top]))."""
    def run(w: int, r: SveRegs) -> None:
        des, es, bits = widening_sizes(w, "widening add/sub")     # destination element size first
        n_src = unpack(r.z[zn(w)], des if wide else es)
        m_src = unpack(r.z[zm(w)], es)[int(top)::2]
        if wide:
            a = [sext(x, 2 * bits) if signed else x for x in n_src]
        else:
            a = [sext(x, bits) if signed else x for x in n_src[int(top)::2]]
        b = [sext(x, bits) if signed else x for x in m_src]
        r.set_z(zd(w), pack([op(x, y, 2 * bits) for x, y in zip(a, b)], des))
    return run


def _add(a: int, b: int, n: int) -> int:
    return a + b


def _sub(a: int, b: int, n: int) -> int:
    return a - b


def _abd(a: int, b: int, n: int) -> int:
    return abs(a - b)


LONG = [("saddl", 0, _add, True), ("uaddl", 2, _add, False), ("ssubl", 4, _sub, True),
        ("usubl", 6, _sub, False), ("sabdl", 12, _abd, True), ("uabdl", 14, _abd, False)]
WIDE = [("saddw", 0, _add, True), ("uaddw", 2, _add, False), ("ssubw", 4, _sub, True),
        ("usubw", 6, _sub, False)]

def _mul_vectors(op: Op, signed: bool):
    """Zd = op(Zn, Zm) element-wise (the SVE2 integer multiply (unpredicated) class)."""
    def run(w: int, r: SveRegs) -> None:
        es = 1 << size(w)
        bits = 8 * es
        a = unpack(r.z[zn(w)], es)
        b = unpack(r.z[zm(w)], es)
        if signed:
            a = [sext(x, bits) for x in a]
            b = [sext(x, bits) for x in b]
        r.set_z(zd(w), pack([op(x, y, bits) for x, y in zip(a, b)], es))
    return run


MUL_VECTORS: list[tuple[str, int, Op, bool]] = [
    ("mul", 0x04206000, lambda a, b, n: a * b, False),
    ("smulh", 0x04206800, lambda a, b, n: (a * b) >> n, True),
    ("umulh", 0x04206C00, lambda a, b, n: (a * b) >> n, False),
    ("sqdmulh", 0x04207000, lambda a, b, n: _sat_s((2 * a * b) >> n, n), True),
    ("sqrdmulh", 0x04207400, lambda a, b, n: _sat_s((2 * a * b + (1 << (n - 1))) >> n, n), True),
]


def _long_mul(op: Op, signed: bool, top: bool, accumulate: int):
    """Zd (2*esize) = op(ext(Zn[2e+top]), ext(Zm[2e+top])), or Zda +/- that (accumulate = +1/-1)."""
    def run(w: int, r: SveRegs) -> None:
        des, es, bits = widening_sizes(w, "widening multiply")
        a = unpack(r.z[zn(w)], es)[int(top)::2]
        b = unpack(r.z[zm(w)], es)[int(top)::2]
        if signed:
            a = [sext(x, bits) for x in a]
            b = [sext(x, bits) for x in b]
        prod = [op(x, y, 2 * bits) for x, y in zip(a, b)]
        if accumulate:
            acc = unpack(r.z[zd(w)], des)
            prod = [c + accumulate * p for c, p in zip(acc, prod)]
        r.set_z(zd(w), pack(prod, des))
    return run


LONG_MUL: list[tuple[str, int, Op, bool]] = [
    ("sqdmull", 0x45006000, lambda a, b, n: _sat_s(2 * a * b, n), True),
    ("smull", 0x45007000, lambda a, b, n: a * b, True),
    ("umull", 0x45007800, lambda a, b, n: a * b, False),
]
MLA_LONG: list[tuple[str, int, bool, int]] = [
    ("smlal", 0x44004000, True, 1), ("umlal", 0x44004800, False, 1),
    ("smlsl", 0x44005000, True, -1), ("umlsl", 0x44005800, False, -1),
]

INSNS: tuple[Sve2Insn, ...] = (
    *(Sve2Insn(name, 0xFF20FC00, value, "sve2", _mul_vectors(op, sg)) for name, value, op, sg in MUL_VECTORS),
    *(Sve2Insn(f"{name}{'bt'[t]}", 0xFF20FC00, value | (t << 10), "sve2", _long_mul(op, sg, bool(t), 0))
      for name, value, op, sg in LONG_MUL for t in (0, 1)),
    *(Sve2Insn(f"{name}{'bt'[t]}", 0xFF20FC00, value | (t << 10), "sve2",
               _long_mul(lambda a, b, n: a * b, sg, bool(t), acc))
      for name, value, sg, acc in MLA_LONG for t in (0, 1)),
    *(Sve2Insn(name, 0xFF3FE000, 0x44188000 | (k << 16), "sve2", _predicated(op, sa, sb))
      for k, (name, op, sa, sb) in enumerate(SATURATING)),
    *(Sve2Insn(name, 0xFF3FE000, 0x44108000 | (k << 16), "sve2", _predicated(op, sg, sg))
      for k, (name, op, sg) in enumerate(HALVING)),
    *(Sve2Insn(name, 0xFF3FE000, value, "sve2", _pairwise(op, sg)) for name, value, op, sg in PAIRWISE),
    *(Sve2Insn(f"{name}{'bt'[t]}", 0xFF20FC00, 0x45000000 | ((k + t) << 10), "sve2",
               _widening(op, sg, bool(t), False))
      for name, k, op, sg in LONG for t in (0, 1)),
    *(Sve2Insn(f"{name}{'bt'[t]}", 0xFF20FC00, 0x45004000 | ((k + t) << 10), "sve2",
               _widening(op, sg, bool(t), True))
      for name, k, op, sg in WIDE for t in (0, 1)),
)
