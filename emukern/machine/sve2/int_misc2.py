"""SVE2 predicated shifts and the unsigned estimates of the SVE2 unit (FEAT_SVE2), merging
under the governing predicate (Pg in bits 12:10), every element size each allows:

* shift by vector: SRSHL, URSHL, SQSHL, UQSHL, SQRSHL, UQRSHL and their reversed forms
  (…R: the shift comes from Zdn, the value from Zm) -- the shift is the whole shift element,
  signed, a negative one shifts right (B/H/S/D);
* shift by immediate: SRSHR, URSHR (rounding right), SQSHL, UQSHL, SQSHLU (saturating left);
* URECPE, URSQRTE: unsigned reciprocal (square root) estimate on 32-bit fixed-point fractions.
"""
from __future__ import annotations

from .elems import active, pack, sext, size, unpack, zd, zn
from .state import Sve2Insn, Sve2Undefined, SveRegs


def _clamp(v: int, lo: int, hi: int) -> int:
    return lo if v < lo else hi if v > hi else v


def _limits(signed_result: bool, bits: int) -> tuple[int, int]:
    if signed_result:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def _merge(w: int, r: SveRegs, es: int, vals: dict[int, int]) -> None:
    out = unpack(r.z[zd(w)], es)
    for i, v in vals.items():
        out[i] = v
    r.set_z(zd(w), pack(out, es))


# ---- shift by vector -----------------------------------------------------------------------------
def _shift_by(v: int, sh: int, rounding: bool, saturate: bool, signed: bool, bits: int) -> int:
    if sh >= 0:
        res = v << sh
    else:
        res = (v + (1 << (-sh - 1))) >> -sh if rounding else v >> -sh
    if saturate:
        res = _clamp(res, *_limits(signed, bits))
    return res


def _shift_vectors(signed: bool, rounding: bool, saturate: bool, reverse: bool):
    def run(w: int, r: SveRegs) -> None:
        es = 1 << size(w)
        bits = 8 * es
        dn = unpack(r.z[zd(w)], es)
        m = unpack(r.z[zn(w)], es)                   # Zm is in bits 9:5
        vals_src, sh_src = (m, dn) if reverse else (dn, m)
        act = active(r.p[(w >> 10) & 7], es, len(dn))
        res = {}
        for i, on in enumerate(act):
            if on:
                v = sext(vals_src[i], bits) if signed else vals_src[i]
                # the whole shift element counts (not just its low byte, as in Advanced SIMD),
                # clamped to one past the element width: beyond that every result is the same
                sh = _clamp(sext(sh_src[i], bits), -bits - 1, bits + 1)
                res[i] = _shift_by(v, sh, rounding, saturate, signed, bits)
        _merge(w, r, es, res)
    return run


# (name, Q:R:U, signed, rounding, saturating); bit 19 Q, bit 18 the reversed form, bit 17 R, bit 16 U
SHIFT_VECTORS: list[tuple[str, int, bool, bool, bool]] = [
    ("srshl", 0b010, True, True, False),
    ("urshl", 0b011, False, True, False),
    ("sqshl", 0b100, True, False, True),
    ("uqshl", 0b101, False, False, True),
    ("sqrshl", 0b110, True, True, True),
    ("uqrshl", 0b111, False, True, True),
]


def _shift_vector_insns():
    for name, qru, sg, rnd, sat in SHIFT_VECTORS:
        q, rr, u = qru >> 2, (qru >> 1) & 1, qru & 1
        for rev in (0, 1):
            value = 0x44008000 | (q << 19) | (rev << 18) | (rr << 17) | (u << 16)
            yield Sve2Insn(name + "r" * rev, 0xFF3FE000, value, "sve2",
                           _shift_vectors(sg, rnd, sat, bool(rev)))


# ---- shift by immediate ------------------------------------------------------------------------------
def _tsz4(w: int) -> tuple[int, int]:
    """(element bytes, tsz:imm3) of the predicated shift-by-immediate class: tsz is bits 23:22
    over bits 9:8, imm3 bits 7:5."""
    tsz = (((w >> 22) & 3) << 2) | ((w >> 8) & 3)
    if tsz == 0:
        raise Sve2Undefined("predicated shift by immediate with tsz = 0000")
    es = 8 if tsz & 8 else 4 if tsz & 4 else 2 if tsz & 2 else 1
    return es, (tsz << 3) | ((w >> 5) & 7)


def _shift_imm(right: bool, signed: bool, saturate: bool, signed_result: bool):
    def run(w: int, r: SveRegs) -> None:
        es, ti = _tsz4(w)
        bits = 8 * es
        src = unpack(r.z[zd(w)], es)
        act = active(r.p[(w >> 10) & 7], es, len(src))
        res = {}
        for i, on in enumerate(act):
            if on:
                v = sext(src[i], bits) if signed else src[i]
                if right:
                    sh = 2 * bits - ti
                    v = (v + (1 << (sh - 1))) >> sh
                else:
                    v <<= ti - bits
                if saturate:
                    v = _clamp(v, *_limits(signed_result, bits))
                res[i] = v
        _merge(w, r, es, res)
    return run


# ---- URECPE / URSQRTE -------------------------------------------------------------------------------
def recip_estimate(a: int) -> int:
    """The 9-bit reciprocal estimate of a 9-bit fraction 0.1xxxxxxxx (256..511), the Arm ARM's
    table-free definition: the reciprocal of the interval's midpoint, rounded."""
    a = a * 2 + 1
    b = (1 << 19) // a
    return (b + 1) // 2


def rsqrt_estimate(a: int) -> int:
    """The 9-bit reciprocal square root estimate of a fraction 128..511 (0.01xxxxxxx scaled
    into [0.25, 1) with the low bit dropped for the upper half)."""
    if a < 256:
        a = a * 2 + 1
    else:
        a = ((a >> 1) << 1) + 1
        a *= 2
    b = 512
    while a * (b + 1) * (b + 1) < (1 << 28):
        b += 1
    return (b + 1) // 2


def _uestimate(sqrt: bool):
    def run(w: int, r: SveRegs) -> None:
        if size(w) != 2:
            raise Sve2Undefined("urecpe/ursqrte other than .S")
        src = unpack(r.z[zn(w)], 4)
        act = active(r.p[(w >> 10) & 7], 4, len(src))
        res = {}
        for i, on in enumerate(act):
            if on:
                x = src[i]
                if sqrt:
                    res[i] = 0xFFFFFFFF if x >> 30 == 0 else (rsqrt_estimate(x >> 23) & 0x1FF) << 23
                else:
                    res[i] = 0xFFFFFFFF if x >> 31 == 0 else (recip_estimate(x >> 23) & 0x1FF) << 23
        _merge(w, r, 4, res)
    return run


INSNS: tuple[Sve2Insn, ...] = (
    # 01000100 size 00 Q N R U 100 Pg Zm Zdn
    *_shift_vector_insns(),
    # 00000100 tszh 00 opc L U 100 Pg tszl imm3 Zdn
    Sve2Insn("sqshl.imm", 0xFF3FE000, 0x04068000, "sve2", _shift_imm(False, True, True, True)),
    Sve2Insn("uqshl.imm", 0xFF3FE000, 0x04078000, "sve2", _shift_imm(False, False, True, False)),
    Sve2Insn("srshr", 0xFF3FE000, 0x040C8000, "sve2", _shift_imm(True, True, False, True)),
    Sve2Insn("urshr", 0xFF3FE000, 0x040D8000, "sve2", _shift_imm(True, False, False, False)),
    Sve2Insn("sqshlu", 0xFF3FE000, 0x040F8000, "sve2", _shift_imm(False, True, True, False)),
    # 01000100 size 00 Q 0 opc 101 Pg Zn Zd
    Sve2Insn("urecpe", 0xFF3FE000, 0x4400A000, "sve2", _uestimate(False)),
    Sve2Insn("ursqrte", 0xFF3FE000, 0x4401A000, "sve2", _uestimate(True)),
)
