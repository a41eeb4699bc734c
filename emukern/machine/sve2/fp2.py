"""The SVE2 floating-point group of the SVE2 unit (FEAT_SVE2), bit-exact with FPSR flags:

* FADDP, FMAXNMP, FMINNMP, FMAXP, FMINP (pairwise, predicated, merging; H/S/D): even result
  elements combine a pair of Zdn, odd ones a pair of Zm, as the integer ADDP;
* FCVTLT (H->S, S->D from the odd narrow elements), FCVTNT (S->H, D->S into the odd narrow
  elements, the even ones kept), FCVTX (D->S rounding to odd, zero-extended) and FCVTXNT (D->S
  rounding to odd into the odd elements); predicated by the wide element, merging;
* FLOGB (H/S/D, merging): the unbiased exponent of each active element as a signed integer;
* FMLALB/FMLALT, FMLSLB/FMLSLT, vectors and indexed: single-precision fused multiply-add of
  the even (B) or odd (T) half-precision elements, widened exactly.

Arithmetic, rounding and NaN handling are fparith's (the Arm ARM's FPAdd/FPMulAdd/FPRound).
Half precision follows FPCR.FZ16 instead of FZ, and -- as the architecture defines -- flushes a
half-precision denormal input without raising Input Denormal; conversions ignore FZ16 on
both sides (FPUnpackCV/FPRoundCV).  FPCR.AHP (alternative half precision) is not modelled.
"""
from __future__ import annotations

from typing import Callable

from .elems import active, pack, size, unpack, zd, zm, zn
from .fparith import (F32, F64, FPCR_DN, FPCR_FZ, FPCR_RMODE_SHIFT, IDC, IOC, FPCtl, FPType, Fmt,
                      Rounding, fp_add, fp_muladd, fp_process_nan, fp_process_nans, fp_round,
                      fp_unpack)
from .state import Sve2Insn, Sve2Undefined, SveRegs

F16 = Fmt(5, 10)
FPCR_FZ16 = 1 << 19
FMT = {2: F16, 4: F32, 8: F64}


def ctl_for(fpcr: int, es: int, convert: bool = False) -> FPCtl:
    """FPCR's controls for arithmetic in elements of ``es`` bytes: half precision flushes by
    FZ16, the others by FZ; a conversion never flushes half precision."""
    if es == 2:
        fz = False if convert else bool(fpcr & FPCR_FZ16)
    else:
        fz = bool(fpcr & FPCR_FZ)
    return FPCtl(Rounding((fpcr >> FPCR_RMODE_SHIFT) & 3), fz, bool(fpcr & FPCR_DN))


def _unpack_in(bits: int, fmt: Fmt, ctl: FPCtl):
    u, flags = fp_unpack(bits, fmt, ctl)
    if fmt is F16:
        flags &= ~IDC                      # a flushed half-precision input is not reported
    return u, flags


# ---- max/min ---------------------------------------------------------------------------------
def fp_maxmin(a: int, b: int, fmt: Fmt, ctl: FPCtl, is_max: bool, num: bool) -> tuple[int, int]:
    """FPMax/FPMin, and FPMaxNum/FPMinNum (``num``: a quiet NaN against a number loses)."""
    ua, fa = _unpack_in(a, fmt, ctl)
    ub, fb = _unpack_in(b, fmt, ctl)
    flags = fa | fb
    if num:
        qa, qb = ua.type is FPType.QNAN, ub.type is FPType.QNAN
        loser = fmt.infinity(1 if is_max else 0)
        if qa and not qb:
            a = loser
            ua, _ = fp_unpack(a, fmt, ctl)
        elif qb and not qa:
            b = loser
            ub, _ = fp_unpack(b, fmt, ctl)
    nan = fp_process_nans([(ua, a), (ub, b)], fmt, ctl)
    if nan is not None:
        return nan[0], flags | nan[1]

    def value(u) -> float | int:
        if u.type is FPType.INFINITY:
            return float("-inf") if u.sign else float("inf")
        if u.type is FPType.ZERO:
            return 0
        from fractions import Fraction
        v = Fraction(u.mant) * (Fraction(2) ** u.exp)
        return -v if u.sign else v
    va, vb = value(ua), value(ub)
    pick_a = va > vb if is_max else va < vb
    u, bits = (ua, a) if pick_a else (ub, b)
    if u.type is FPType.ZERO:
        if ua.type is FPType.ZERO and ub.type is FPType.ZERO:
            sign = (ua.sign & ub.sign) if is_max else (ua.sign | ub.sign)
        else:
            sign = u.sign
        return fmt.zero(sign), flags
    return bits, flags


def _fadd(a: int, b: int, fmt: Fmt, ctl: FPCtl) -> tuple[int, int]:
    if fmt is F16:
        r, f = fp_add(a, b, fmt, ctl)
        return r, f & ~IDC
    return fp_add(a, b, fmt, ctl)


PAIR_OPS: dict[int, tuple[str, Callable[[int, int, Fmt, FPCtl], tuple[int, int]]]] = {
    0: ("faddp", _fadd),
    4: ("fmaxnmp", lambda a, b, f, c: fp_maxmin(a, b, f, c, True, True)),
    5: ("fminnmp", lambda a, b, f, c: fp_maxmin(a, b, f, c, False, True)),
    6: ("fmaxp", lambda a, b, f, c: fp_maxmin(a, b, f, c, True, False)),
    7: ("fminp", lambda a, b, f, c: fp_maxmin(a, b, f, c, False, False)),
}


def _pairwise(op):
    def run(w: int, r: SveRegs) -> None:
        s = size(w)
        if s == 0:
            raise Sve2Undefined("fp pairwise with size = 00")
        es = 1 << s
        fmt, ctl = FMT[es], ctl_for(r.fpcr, es)
        a = unpack(r.z[zd(w)], es)
        b = unpack(r.z[zn(w)], es)                   # Zm is in bits 9:5 in this class
        out = list(a)
        flags = 0
        for e, on in enumerate(active(r.p[(w >> 10) & 7], es, len(a))):
            if on:
                x, y = (a[e], a[e + 1]) if e % 2 == 0 else (b[e - 1], b[e])
                out[e], f = op(x, y, fmt, ctl)
                flags |= f
        r.set_z(zd(w), pack(out, es))
        r.raise_fp_flags(flags)
    return run


# ---- conversions -----------------------------------------------------------------------------
def fp_convert(bits: int, src: Fmt, dst: Fmt, ctl_in: FPCtl, ctl_out: FPCtl) -> tuple[int, int]:
    """FPConvert between two formats (widening is exact; narrowing rounds by ``ctl_out``)."""
    u, flags = fp_unpack(bits, src, ctl_in)
    if u.type in (FPType.QNAN, FPType.SNAN):
        if ctl_out.dn:
            r = dst.default_nan()
        else:
            # the sign and the top of the payload carry over; the result is quiet
            frac = bits & ((1 << src.f) - 1)
            frac = frac << (dst.f - src.f) if dst.f >= src.f else frac >> (src.f - dst.f)
            r = (u.sign << (dst.width - 1)) | (dst.emax_field << dst.f) | frac | (1 << (dst.f - 1))
        return r, flags | (IOC if u.type is FPType.SNAN else 0)
    if u.type is FPType.INFINITY:
        return dst.infinity(u.sign), flags
    if u.type is FPType.ZERO:
        return dst.zero(u.sign), flags
    r, rf = fp_round(u.sign, u.mant, u.exp, dst, ctl_out)
    return r, flags | rf


def _cvt(src_es: int, dst_es: int, top: bool, odd_round: bool):
    """One precision conversion of the 'odd elements' class: the wide element governs."""
    wide = max(src_es, dst_es)

    def run(w: int, r: SveRegs) -> None:
        ctl_in = ctl_for(r.fpcr, src_es, convert=True)
        ctl_out = ctl_for(r.fpcr, dst_es, convert=True)
        if odd_round:
            ctl_out = FPCtl(Rounding.ODD, ctl_out.fz, ctl_out.dn)
        src = unpack(r.z[zn(w)], src_es)
        dst = unpack(r.z[zd(w)], dst_es)
        n = r.vl // wide
        flags = 0
        for e, on in enumerate(active(r.p[(w >> 10) & 7], wide, n)):
            if not on:
                continue
            if src_es < dst_es:                         # FCVTLT: the odd narrow source element
                dst[e], f = fp_convert(src[2 * e + 1], FMT[src_es], FMT[dst_es], ctl_in, ctl_out)
            elif top:                                   # FCVTNT / FCVTXNT: into the odd narrow one
                dst[2 * e + 1], f = fp_convert(src[e], FMT[src_es], FMT[dst_es], ctl_in, ctl_out)
            else:                                       # FCVTX: zero-extended into the wide one
                dst[2 * e], f = fp_convert(src[e], FMT[src_es], FMT[dst_es], ctl_in, ctl_out)
                dst[2 * e + 1] = 0
            flags |= f
        r.set_z(zd(w), pack(dst, dst_es))
        r.raise_fp_flags(flags)
    return run


# ---- FLOGB -----------------------------------------------------------------------------------
def flogb(w: int, r: SveRegs) -> None:
    s = (w >> 17) & 3
    if s == 0:
        raise Sve2Undefined("flogb with size = 00")
    es = 1 << s
    bits = 8 * es
    fmt, ctl = FMT[es], ctl_for(r.fpcr, es)
    src = unpack(r.z[zn(w)], es)
    dst = unpack(r.z[zd(w)], es)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    flags = 0
    for e, on in enumerate(active(r.p[(w >> 10) & 7], es, len(src))):
        if not on:
            continue
        u, f = _unpack_in(src[e], fmt, ctl)
        flags |= f
        if u.type in (FPType.QNAN, FPType.SNAN, FPType.ZERO):
            v = lo
            flags |= IOC
        elif u.type is FPType.INFINITY:
            v = hi
        else:
            v = u.exp + u.mant.bit_length() - 1
        dst[e] = v
    r.set_z(zd(w), pack(dst, es))
    r.raise_fp_flags(flags)


# ---- FMLALB/T, FMLSLB/T ----------------------------------------------------------------------
def half_to_single(h: int, fz16: bool) -> int:
    """A half-precision value as single precision, exactly (a signalling NaN stays signalling,
    so the fused multiply-add reports it); with FZ16 a denormal reads as a signed zero."""
    sign = (h >> 15) & 1
    expf = (h >> 10) & 31
    frac = h & 0x3FF
    if expf == 31:
        return (sign << 31) | (0xFF << 23) | (frac << 13)
    if expf == 0:
        if frac == 0 or fz16:
            return sign << 31
        shift = 11 - frac.bit_length()          # normalise the denormal: 1.f * 2**(-14 - shift)
        frac = (frac << shift) & 0x3FF
        return (sign << 31) | ((127 - 14 - shift) << 23) | (frac << 13)
    return (sign << 31) | ((expf - 15 + 127) << 23) | (frac << 13)


def _fmlal(indexed: bool):
    def run(w: int, r: SveRegs) -> None:
        sub = bool((w >> 13) & 1)
        top = (w >> 10) & 1
        fz16 = bool(r.fpcr & FPCR_FZ16)
        ctl = ctl_for(r.fpcr, 4)
        acc = unpack(r.z[zd(w)], 4)
        a = unpack(r.z[zn(w)], 2)
        if indexed:
            idx = (((w >> 19) & 3) << 1) | ((w >> 11) & 1)
            b_all = unpack(r.z[(w >> 16) & 7], 2)
            b = [b_all[(e // 4) * 8 + idx] for e in range(len(acc))]   # per 128-bit segment
        else:
            b = unpack(r.z[zm(w)], 2)[top::2]
        flags = 0
        out = []
        for e, c in enumerate(acc):
            x = a[2 * e + top]
            if sub:
                x ^= 0x8000                                # FPNeg, NaNs included
            v, f = fp_muladd(c, half_to_single(x, fz16), half_to_single(b[e], fz16), F32, ctl)
            out.append(v)
            flags |= f
        r.set_z(zd(w), pack(out, 4))
        r.raise_fp_flags(flags)
    return run


INSNS: tuple[Sve2Insn, ...] = (
    *(Sve2Insn(name, 0xFF3FE000, 0x64108000 | (opc << 16), "sve2", _pairwise(op))
      for opc, (name, op) in PAIR_OPS.items()),
    Sve2Insn("fcvtnt.h", 0xFFFFE000, 0x6488A000, "sve2", _cvt(4, 2, True, False)),
    Sve2Insn("fcvtlt.s", 0xFFFFE000, 0x6489A000, "sve2", _cvt(2, 4, True, False)),
    Sve2Insn("fcvtnt.s", 0xFFFFE000, 0x64CAA000, "sve2", _cvt(8, 4, True, False)),
    Sve2Insn("fcvtlt.d", 0xFFFFE000, 0x64CBA000, "sve2", _cvt(4, 8, True, False)),
    Sve2Insn("fcvtxnt", 0xFFFFE000, 0x640AA000, "sve2", _cvt(8, 4, True, True)),
    Sve2Insn("fcvtx", 0xFFFFE000, 0x650AA000, "sve2", _cvt(8, 4, False, True)),
    Sve2Insn("flogb", 0xFFF9E000, 0x6518A000, "sve2", flogb),
    *(Sve2Insn(f"{'fmlsl' if s else 'fmlal'}{'bt'[t]}", 0xFFE0FC00, 0x64A08000 | (s << 13) | (t << 10),
               "sve2", _fmlal(False)) for s in (0, 1) for t in (0, 1)),
    *(Sve2Insn(f"{'fmlsl' if s else 'fmlal'}{'bt'[t]}.idx", 0xFFE0F400, 0x64A04000 | (s << 13) | (t << 10),
               "sve2", _fmlal(True)) for s in (0, 1) for t in (0, 1)),
)
