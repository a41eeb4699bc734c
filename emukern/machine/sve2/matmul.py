"""SVE matrix multiply and BFloat16 instructions (FEAT_I8MM, FEAT_F32MM, FEAT_F64MM, FEAT_BF16).

Each function executes one encoding class on a ``SveRegs`` as the Arm ARM describes it; the
unit's decoder reads ``INSNS``.  The matrix forms treat every 128-bit (FMMLA .D: 256-bit)
segment of the vectors as small matrices: Zn holds the 2-row left operand row by row, Zm holds
the right operand *transposed* (also 2 rows), and Zda the 2x2 accumulator, so
``Zda[2i+j] += sum_k Zn[i][k] * Zm[j][k]``.

Floating point is exact integer arithmetic rounded by ``fparith`` (Python has no float32 FMA):
- FMMLA, BFCVT, BFCVTNT, BFMLALB/T honour FPCR (RMode, FZ, DN) and record FPSR flags;
- BFDOT and BFMMLA follow the fixed "BFloat16 behaviours" of a CPU without FEAT_EBF16 (the CPU
  emukern models has none): FPCR ignored, inputs and tiny results flushed to zero, default NaN,
  round to odd, no flags.

Not here: the FEAT_F64MM load forms LD1RO{B,H,W,D} are memory instructions (address
generation, faults) and belong with the unit's loads and stores, not with these pure functions.
"""
from __future__ import annotations

from typing import Callable

from .fparith import (BF16_DOT_CTL, F32, F64, Fmt, FPCtl, fp_add, fp_convert_bf, fp_mul,
                      fp_muladd)
from .state import Sve2Insn, Sve2Undefined, SveRegs

# --------------------------------------------------------------------------------------------
# field extraction and element access


def _rd(w: int) -> int:
    return w & 31


def _rn(w: int) -> int:
    return (w >> 5) & 31


def _rm(w: int) -> int:
    return (w >> 16) & 31


def _elems(z: bytes | bytearray, esize: int, signed: bool = False) -> list[int]:
    return [int.from_bytes(z[i:i + esize], "little", signed=signed)
            for i in range(0, len(z), esize)]


def _pack(vals: list[int], esize: int) -> bytes:
    mask = (1 << (8 * esize)) - 1
    return b"".join((v & mask).to_bytes(esize, "little") for v in vals)


def _active(regs: SveRegs, pg: int, e: int, esize: int) -> bool:
    # An element is active when the predicate bit of its lowest-numbered byte is set.
    return bool((regs.p[pg] >> (e * esize)) & 1)


# --------------------------------------------------------------------------------------------
# FEAT_I8MM: 8-bit integer matrix multiply and mixed-sign dot products

def _dot4(a: list[int], ai: int, b: list[int], bi: int) -> int:
    return sum(a[ai + k] * b[bi + k] for k in range(4))


def _int_mmla(word: int, regs: SveRegs) -> None:
    """SMMLA / USMMLA / UMMLA Zda.S, Zn.B, Zm.B (bits 23:22 = uns: 00 signed x signed, 10
    unsigned x signed, 11 unsigned x unsigned; 01 is unallocated).  Per 128-bit segment: the
    2x8 byte matrix in Zn times the transposed 2x8 byte matrix in Zm, added with wrap-around
    to the 2x2 matrix of 32-bit accumulators."""
    uns = (word >> 22) & 3
    if uns == 1:
        raise Sve2Undefined(f"integer matrix multiply with uns=01: {word:#010x}")
    n_signed, m_signed = uns == 0, uns != 3
    n = _elems(regs.z[_rn(word)], 1, n_signed)
    m = _elems(regs.z[_rm(word)], 1, m_signed)
    acc = _elems(regs.z[_rd(word)], 4)
    out = list(acc)
    for seg in range(regs.vl // 16):
        b, a = seg * 16, seg * 4
        for i in range(2):
            for j in range(2):
                s = sum(n[b + 8 * i + k] * m[b + 8 * j + k] for k in range(8))
                out[a + 2 * i + j] = acc[a + 2 * i + j] + s
    regs.set_z(_rd(word), _pack(out, 4))


def _usdot_vectors(word: int, regs: SveRegs) -> None:
    """USDOT Zda.S, Zn.B, Zm.B: each 32-bit lane adds the four products of unsigned bytes of Zn
    with the signed bytes of Zm in the same lane.  Only size = 10 is allocated."""
    if (word >> 22) & 3 != 2:
        raise Sve2Undefined(f"mixed-sign dot product with size != 10: {word:#010x}")
    n = _elems(regs.z[_rn(word)], 1, False)
    m = _elems(regs.z[_rm(word)], 1, True)
    acc = _elems(regs.z[_rd(word)], 4)
    regs.set_z(_rd(word), _pack([acc[e] + _dot4(n, 4 * e, m, 4 * e)
                                 for e in range(len(acc))], 4))


def _mixed_dot_indexed(word: int, regs: SveRegs) -> None:
    """USDOT / SUDOT Zda.S, Zn.B, Zm.B[imm] (bit 10: 0 USDOT = unsigned Zn x signed Zm,
    1 SUDOT = signed Zn x unsigned Zm).  Zm is Z0-Z7 (bits 18:16) and imm (bits 20:19) picks
    one 32-bit group of four bytes in each 128-bit segment, used by every lane of that segment.
    Only size = 10 is allocated."""
    if (word >> 22) & 3 != 2:
        raise Sve2Undefined(f"mixed-sign indexed dot product with size != 10: {word:#010x}")
    su = (word >> 10) & 1
    zm, imm = (word >> 16) & 7, (word >> 19) & 3
    n = _elems(regs.z[_rn(word)], 1, signed=bool(su))
    m = _elems(regs.z[zm], 1, signed=not su)
    acc = _elems(regs.z[_rd(word)], 4)
    out = []
    for e in range(len(acc)):
        mi = (e // 4) * 16 + 4 * imm
        out.append(acc[e] + _dot4(n, 4 * e, m, mi))
    regs.set_z(_rd(word), _pack(out, 4))


# --------------------------------------------------------------------------------------------
# FEAT_F32MM / FEAT_F64MM: FMMLA


def fp_matmul_add(addend: list[int], op1: list[int], op2: list[int], fmt: Fmt,
                  ctl: FPCtl) -> tuple[list[int], int]:
    """FPMatMulAdd on one segment (2x2 matrices of ``fmt`` elements): each result is
    ``addend + (op1[i][0]*op2[j][0] + op1[i][1]*op2[j][1])`` with every multiply and add
    rounded separately (not fused), the addend first in NaN priority."""
    out, flags = [], 0
    for i in range(2):
        for j in range(2):
            p0, f0 = fp_mul(op1[2 * i], op2[2 * j], fmt, ctl)
            p1, f1 = fp_mul(op1[2 * i + 1], op2[2 * j + 1], fmt, ctl)
            s, f2 = fp_add(p0, p1, fmt, ctl)
            r, f3 = fp_add(addend[2 * i + j], s, fmt, ctl)
            out.append(r)
            flags |= f0 | f1 | f2 | f3
    return out, flags


def _fmmla(fmt: Fmt) -> Callable[[int, SveRegs], None]:
    esize = fmt.width // 8

    def fmmla(word: int, regs: SveRegs) -> None:
        """FMMLA Zda.T, Zn.T, Zm.T: per segment of four elements, Zda += Zn x Zm^T as 2x2
        matrices (FPMatMulAdd under FPCR).  The .D form's 256-bit segment does not fit a
        128-bit vector: the Arm ARM makes it UNDEFINED there."""
        seg = 4 * esize
        if regs.vl < seg:
            raise Sve2Undefined(f"FMMLA with {8 * seg}-bit segments at VL {8 * regs.vl}")
        ctl = FPCtl.from_fpcr(regs.fpcr)
        n = _elems(regs.z[_rn(word)], esize)
        m = _elems(regs.z[_rm(word)], esize)
        a = _elems(regs.z[_rd(word)], esize)
        # Whole segments only; a VL that is not a multiple of the segment (possible for .D,
        # e.g. VL 384) leaves zeros in the trailing part, as the pseudocode's Zeros() result.
        out = [0] * len(a)
        flags = 0
        for s in range(regs.vl // seg):
            r, f = fp_matmul_add(a[4 * s:4 * s + 4], n[4 * s:4 * s + 4], m[4 * s:4 * s + 4],
                                 fmt, ctl)
            out[4 * s:4 * s + 4] = r
            flags |= f
        regs.set_z(_rd(word), _pack(out, esize))
        regs.raise_fp_flags(flags)
    return fmmla


def _fp_unallocated(word: int, regs: SveRegs) -> None:
    raise Sve2Undefined(f"floating-point matrix multiply with opc=00: {word:#010x}")


# --------------------------------------------------------------------------------------------
# FEAT_BF16


def bf_dot_add(addend: int, a0: int, a1: int, b0: int, b1: int) -> int:
    """BFDotAdd without FEAT_EBF16: ``addend + (a0*b0 + a1*b1)`` in single precision with the
    fixed BFloat16 behaviours (each step rounded to odd, flush to zero, default NaN, no flags).
    The operands are BFloat16: widening one to single precision is appending 16 zero bits."""
    ctl = BF16_DOT_CTL
    p0, _ = fp_mul(a0 << 16, b0 << 16, F32, ctl)
    p1, _ = fp_mul(a1 << 16, b1 << 16, F32, ctl)
    s, _ = fp_add(p0, p1, F32, ctl)
    r, _ = fp_add(addend, s, F32, ctl)
    return r


def _bfcvt(top: bool) -> Callable[[int, SveRegs], None]:
    def bfcvt(word: int, regs: SveRegs) -> None:
        """BFCVT / BFCVTNT Zd.H, Pg/M, Zn.S: convert each active single-precision element to
        BFloat16 under FPCR.  BFCVT writes the even halfword of the 32-bit container and zeroes
        the odd one; BFCVTNT writes the odd (top) halfword and keeps the even one.  Inactive
        containers keep their old value."""
        pg = (word >> 10) & 7
        ctl = FPCtl.from_fpcr(regs.fpcr)
        src = _elems(regs.z[_rn(word)], 4)
        dst = _elems(regs.z[_rd(word)], 4)
        flags = 0
        for e, v in enumerate(src):
            if not _active(regs, pg, e, 4):
                continue
            r, f = fp_convert_bf(v, ctl)
            flags |= f
            dst[e] = (r << 16) | (dst[e] & 0xFFFF) if top else r
        regs.set_z(_rd(word), _pack(dst, 4))
        regs.raise_fp_flags(flags)
    return bfcvt


def _bfdot_vectors(word: int, regs: SveRegs) -> None:
    """BFDOT Zda.S, Zn.H, Zm.H: each 32-bit lane adds the dot product of the two BFloat16 pairs
    of Zn and Zm in that lane (BFDotAdd; FPCR ignored)."""
    n = _elems(regs.z[_rn(word)], 2)
    m = _elems(regs.z[_rm(word)], 2)
    acc = _elems(regs.z[_rd(word)], 4)
    out = [bf_dot_add(acc[e], n[2 * e], n[2 * e + 1], m[2 * e], m[2 * e + 1])
           for e in range(len(acc))]
    regs.set_z(_rd(word), _pack(out, 4))


def _bfdot_indexed(word: int, regs: SveRegs) -> None:
    """BFDOT Zda.S, Zn.H, Zm.H[imm]: as the vector form, but every lane of a 128-bit segment
    uses the BFloat16 pair imm (bits 20:19) of that segment of Zm (Z0-Z7, bits 18:16)."""
    zm, imm = (word >> 16) & 7, (word >> 19) & 3
    n = _elems(regs.z[_rn(word)], 2)
    m = _elems(regs.z[zm], 2)
    acc = _elems(regs.z[_rd(word)], 4)
    out = []
    for e in range(len(acc)):
        mi = 2 * ((e // 4) * 4 + imm)
        out.append(bf_dot_add(acc[e], n[2 * e], n[2 * e + 1], m[mi], m[mi + 1]))
    regs.set_z(_rd(word), _pack(out, 4))


def _bfmmla(word: int, regs: SveRegs) -> None:
    """BFMMLA Zda.S, Zn.H, Zm.H: per 128-bit segment, the 2x4 BFloat16 matrix in Zn times the
    transposed 2x4 matrix in Zm added to the 2x2 single-precision accumulator, as two chained
    BFDotAdd steps (k = 0, 1) per result (BFMatMulAdd; FPCR ignored)."""
    n = _elems(regs.z[_rn(word)], 2)
    m = _elems(regs.z[_rm(word)], 2)
    acc = _elems(regs.z[_rd(word)], 4)
    out = list(acc)
    for seg in range(regs.vl // 16):
        h, a = seg * 8, seg * 4
        for i in range(2):
            for j in range(2):
                s = acc[a + 2 * i + j]
                for k in range(2):
                    ni, mi = h + 4 * i + 2 * k, h + 4 * j + 2 * k
                    s = bf_dot_add(s, n[ni], n[ni + 1], m[mi], m[mi + 1])
                out[a + 2 * i + j] = s
    regs.set_z(_rd(word), _pack(out, 4))


def _bfmlal_vectors(word: int, regs: SveRegs) -> None:
    """BFMLALB / BFMLALT Zda.S, Zn.H, Zm.H (bit 10: 0 bottom = even halfwords, 1 top = odd):
    each 32-bit lane is a fused single-precision multiply-add of the widened BFloat16 values
    under FPCR (FPMulAdd: rounding mode, FZ, DN and flags all apply)."""
    sel = (word >> 10) & 1
    ctl = FPCtl.from_fpcr(regs.fpcr)
    n = _elems(regs.z[_rn(word)], 2)
    m = _elems(regs.z[_rm(word)], 2)
    acc = _elems(regs.z[_rd(word)], 4)
    out, flags = [], 0
    for e in range(len(acc)):
        r, f = fp_muladd(acc[e], n[2 * e + sel] << 16, m[2 * e + sel] << 16, F32, ctl)
        out.append(r)
        flags |= f
    regs.set_z(_rd(word), _pack(out, 4))
    regs.raise_fp_flags(flags)


def _bfmlal_indexed(word: int, regs: SveRegs) -> None:
    """BFMLALB / BFMLALT Zda.S, Zn.H, Zm.H[imm]: as the vector form, but the multiplier is the
    BFloat16 element imm (0-7: bits 20:19 high, bit 11 low) of each 128-bit segment of Zm
    (Z0-Z7, bits 18:16), whichever of bottom/top is selected for Zn."""
    sel = (word >> 10) & 1
    zm = (word >> 16) & 7
    imm = (((word >> 19) & 3) << 1) | ((word >> 11) & 1)
    ctl = FPCtl.from_fpcr(regs.fpcr)
    n = _elems(regs.z[_rn(word)], 2)
    m = _elems(regs.z[zm], 2)
    acc = _elems(regs.z[_rd(word)], 4)
    out, flags = [], 0
    for e in range(len(acc)):
        mv = m[(e // 4) * 8 + imm]
        r, f = fp_muladd(acc[e], n[2 * e + sel] << 16, mv << 16, F32, ctl)
        out.append(r)
        flags |= f
    regs.set_z(_rd(word), _pack(out, 4))
    regs.raise_fp_flags(flags)


# --------------------------------------------------------------------------------------------
# the encoding classes (mask, value) the unit's decoder matches

INSNS: tuple[Sve2Insn, ...] = (
    # SVE Integer Matrix Multiply Accumulate: 01000101 uns:2 0 Zm 100110 Zn Zda
    Sve2Insn("SMMLA/USMMLA/UMMLA", 0xFF20FC00, 0x45009800, "svei8mm", _int_mmla),
    # SVE mixed sign dot product: 01000100 size:2 0 Zm 011110 Zn Zda
    Sve2Insn("USDOT (vectors)", 0xFF20FC00, 0x44007800, "svei8mm", _usdot_vectors),
    # SVE mixed sign dot product (indexed): 01000100 size:2 1 i2 Zm 00011 U Zn Zda
    Sve2Insn("USDOT/SUDOT (indexed)", 0xFF20F800, 0x44201800, "svei8mm", _mixed_dot_indexed),
    # SVE floating point matrix multiply accumulate: 01100100 opc:2 1 Zm 111001 Zn Zda
    Sve2Insn("FMMLA (opc=00)", 0xFFE0FC00, 0x6420E400, "svef32mm", _fp_unallocated),
    Sve2Insn("BFMMLA", 0xFFE0FC00, 0x6460E400, "svebf16", _bfmmla),
    Sve2Insn("FMMLA .S", 0xFFE0FC00, 0x64A0E400, "svef32mm", _fmmla(F32)),
    Sve2Insn("FMMLA .D", 0xFFE0FC00, 0x64E0E400, "svef64mm", _fmmla(F64)),
    # SVE floating-point convert precision (opc=10 opc2=10) / odd elements
    Sve2Insn("BFCVT", 0xFFFFE000, 0x658AA000, "svebf16", _bfcvt(top=False)),
    Sve2Insn("BFCVTNT", 0xFFFFE000, 0x648AA000, "svebf16", _bfcvt(top=True)),
    # SVE BFloat16 floating-point dot product (vectors / indexed)
    Sve2Insn("BFDOT (vectors)", 0xFFE0FC00, 0x64608000, "svebf16", _bfdot_vectors),
    Sve2Insn("BFDOT (indexed)", 0xFFE0FC00, 0x64604000, "svebf16", _bfdot_indexed),
    # SVE floating-point multiply-add long, BFloat16 (o2=1, op=0): 01100100 111 Zm 1000 0 T ...
    Sve2Insn("BFMLALB/BFMLALT (vectors)", 0xFFE0F800, 0x64E08000, "svebf16", _bfmlal_vectors),
    # ... indexed: 01100100 111 i3h Zm 0100 i3l T Zn Zda
    Sve2Insn("BFMLALB/BFMLALT (indexed)", 0xFFE0F000, 0x64E04000, "svebf16", _bfmlal_indexed),
)
