"""Bit-exact IEEE 754 arithmetic the way the Arm ARM's shared pseudocode defines it.

Python floats are float64 with no fused multiply-add and no control over rounding, so the
SVE matrix/BFloat16 instructions cannot use them.  Here every value is unpacked into an exact
integer mantissa and a power-of-two exponent, arithmetic is exact (Python integers), and one
function, :func:`fp_round`, rounds the exact result into the destination format following the
Arm ARM's ``FPRoundBase``: tininess is detected *before* rounding (AArch64 with FPCR.AH = 0),
FPCR.FZ flushes a tiny result to a signed zero raising only UFC, overflow gives infinity or the
largest normal depending on the rounding mode, and Round-to-Odd is available for the fixed
BFloat16 behaviours.

The functions mirror the pseudocode names: ``fp_unpack`` (FPUnpack), ``fp_process_nans``
(FPProcessNaNs), ``fp_process_nans3`` (FPProcessNaNs3), ``fp_add`` (FPAdd), ``fp_mul`` (FPMul),
``fp_muladd`` (FPMulAdd), ``fp_convert_bf`` (FPConvertBF).  Each returns ``(bits, flags)``:
``flags`` are FPSR cumulative bits for the caller to OR into FPSR (nothing is raised when the
operation's ``fpexc`` is false, as for the BFloat16 dot products).

FPCR.AH (FEAT_AFP) is not modelled: the CPU emukern presents (QEMU 7.2's ``max``) does not
implement FEAT_AFP, so FPCR.AH and FPCR.FIZ are RES0 there and the AH = 1 paths never apply.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

# FPSR cumulative exception bits.
IOC = 1 << 0
DZC = 1 << 1
OFC = 1 << 2
UFC = 1 << 3
IXC = 1 << 4
IDC = 1 << 7

# FPCR fields the instructions here honour.
FPCR_DN = 1 << 25
FPCR_FZ = 1 << 24
FPCR_RMODE_SHIFT = 22


class Rounding(Enum):
    TIEEVEN = 0
    POSINF = 1
    NEGINF = 2
    ZERO = 3
    ODD = 4          # Round to Odd; an overflow gives the largest normal (FPRounding_ODD)
    ODD_INF = 5      # Round to Odd with overflow to infinity: the BFloat16 BFRound behaviour


@dataclass(frozen=True)
class Fmt:
    """An IEEE binary interchange format: ``e`` exponent bits, ``f`` fraction bits."""
    e: int
    f: int

    @property
    def width(self) -> int:
        return 1 + self.e + self.f

    @property
    def emax_field(self) -> int:
        return (1 << self.e) - 1

    @property
    def bias(self) -> int:
        return (1 << (self.e - 1)) - 1

    @property
    def min_exp(self) -> int:
        """The exponent of the smallest normal number (the pseudocode's ``minimum_exp``)."""
        return 1 - self.bias

    def default_nan(self) -> int:
        # FPDefaultNaN: positive, all-ones exponent, only the top fraction bit set.
        return (self.emax_field << self.f) | (1 << (self.f - 1))

    def infinity(self, sign: int) -> int:
        return (sign << (self.width - 1)) | (self.emax_field << self.f)

    def zero(self, sign: int) -> int:
        return sign << (self.width - 1)

    def max_normal(self, sign: int) -> int:
        return (sign << (self.width - 1)) | ((self.emax_field - 1) << self.f) | ((1 << self.f) - 1)


F32 = Fmt(8, 23)
F64 = Fmt(11, 52)
BF16 = Fmt(8, 7)


class FPType(Enum):
    ZERO = 0
    NONZERO = 1
    INFINITY = 2
    QNAN = 3
    SNAN = 4


@dataclass(frozen=True)
class FPCtl:
    """The FPCR fields an operation uses, resolved once per instruction."""
    rounding: Rounding
    fz: bool
    dn: bool
    fpexc: bool = True      # whether the operation reports FPSR flags at all

    @classmethod
    def from_fpcr(cls, fpcr: int) -> "FPCtl":
        """FPRoundingMode(FPCR), FPCR.FZ and FPCR.DN, as a normal (FPCR-honouring) instruction."""
        return cls(Rounding((fpcr >> FPCR_RMODE_SHIFT) & 3), bool(fpcr & FPCR_FZ),
                   bool(fpcr & FPCR_DN))


#: The fixed environment of the BFloat16 dot products without FEAT_EBF16 (BFDOT, BFMMLA):
#: FPCR is ignored, denormal inputs and tiny results are flushed to zero, any NaN gives the
#: default NaN, rounding is to odd with overflow to infinity, and no flag is recorded.
BF16_DOT_CTL = FPCtl(Rounding.ODD_INF, fz=True, dn=True, fpexc=False)


@dataclass(frozen=True)
class Unpacked:
    """FPUnpack's result: the class, the sign and, for NONZERO, the exact magnitude
    ``mant * 2**exp`` (``mant`` > 0)."""
    type: FPType
    sign: int
    mant: int = 0
    exp: int = 0


def fp_unpack(bits: int, fmt: Fmt, ctl: FPCtl) -> tuple[Unpacked, int]:
    """FPUnpack: classify ``bits``; with FZ a denormal input reads as a signed zero and, when the
    operation reports flags, records Input Denormal (IDC)."""
    sign = (bits >> (fmt.width - 1)) & 1
    expf = (bits >> fmt.f) & fmt.emax_field
    frac = bits & ((1 << fmt.f) - 1)
    if expf == 0:
        if frac == 0:
            return Unpacked(FPType.ZERO, sign), 0
        if ctl.fz:
            return Unpacked(FPType.ZERO, sign), (IDC if ctl.fpexc else 0)
        return Unpacked(FPType.NONZERO, sign, frac, fmt.min_exp - fmt.f), 0
    if expf == fmt.emax_field:
        if frac == 0:
            return Unpacked(FPType.INFINITY, sign), 0
        quiet = frac >> (fmt.f - 1)
        return Unpacked(FPType.QNAN if quiet else FPType.SNAN, sign), 0
    return Unpacked(FPType.NONZERO, sign, frac | (1 << fmt.f), expf - fmt.bias - fmt.f), 0


def fp_process_nan(u: Unpacked, bits: int, fmt: Fmt, ctl: FPCtl) -> tuple[int, int]:
    """FPProcessNaN: a signalling NaN is quietened (and raises Invalid Operation); with FPCR.DN
    the result is the default NaN instead of the operand's payload."""
    flags = IOC if (u.type is FPType.SNAN and ctl.fpexc) else 0
    if ctl.dn:
        return fmt.default_nan(), flags
    return bits | (1 << (fmt.f - 1)), flags


def fp_process_nans(ops: list[tuple[Unpacked, int]], fmt: Fmt,
                    ctl: FPCtl) -> tuple[int, int] | None:
    """FPProcessNaNs / FPProcessNaNs3: the first signalling NaN in operand order wins, else the
    first quiet NaN; ``None`` when no operand is a NaN.  (For FPMulAdd the order is addend,
    multiplicand, multiplier.)"""
    for want in (FPType.SNAN, FPType.QNAN):
        for u, bits in ops:
            if u.type is want:
                return fp_process_nan(u, bits, fmt, ctl)
    return None


def fp_round(sign: int, mant: int, exp: int, fmt: Fmt, ctl: FPCtl) -> tuple[int, int]:
    """FPRoundBase: round the exact nonzero value ``(-1)**sign * mant * 2**exp`` into ``fmt``.

    Tininess is judged on the unrounded value (the pseudocode's ``exponent < minimum_exp``),
    which is also when FPCR.FZ flushes the result to zero: a flush records only Underflow, an
    inexact tiny result records Underflow and Inexact, an overflow records Overflow and Inexact.
    """
    assert mant > 0
    rnd = ctl.rounding
    exponent = exp + mant.bit_length() - 1          # value = 1.xxx * 2**exponent
    flags = 0
    if ctl.fz and exponent < fmt.min_exp:
        return fmt.zero(sign), (UFC if ctl.fpexc else 0)
    biased_exp = max(exponent - fmt.min_exp + 1, 0)
    # The unit in the last place of the result is 2**lsb_exp: F fraction bits below the
    # leading one for a normal result, the subnormal scale for a tiny one.
    lsb_exp = max(exponent, fmt.min_exp) - fmt.f
    shift = lsb_exp - exp
    if shift <= 0:
        int_mant, rem, half = mant << -shift, 0, 1
    else:
        int_mant, rem, half = mant >> shift, mant & ((1 << shift) - 1), 1 << (shift - 1)
    inexact = rem != 0
    if biased_exp == 0 and inexact:
        flags |= UFC
    if rnd is Rounding.TIEEVEN:
        round_up = rem > half or (rem == half and int_mant & 1 == 1)
        overflow_to_inf = True
    elif rnd is Rounding.POSINF:
        round_up, overflow_to_inf = inexact and sign == 0, sign == 0
    elif rnd is Rounding.NEGINF:
        round_up, overflow_to_inf = inexact and sign == 1, sign == 1
    else:
        round_up, overflow_to_inf = False, rnd is Rounding.ODD_INF
    if round_up:
        int_mant += 1
        if int_mant == 1 << fmt.f:            # a subnormal rounded up to the smallest normal
            biased_exp = 1
        if int_mant == 1 << (fmt.f + 1):      # the mantissa carried out: renormalise
            biased_exp += 1
            int_mant >>= 1
    if inexact and rnd in (Rounding.ODD, Rounding.ODD_INF):
        int_mant |= 1
    if biased_exp >= fmt.emax_field:
        result = fmt.infinity(sign) if overflow_to_inf else fmt.max_normal(sign)
        flags |= OFC
        inexact = True
    else:
        result = ((sign << (fmt.width - 1)) | (biased_exp << fmt.f)
                  | (int_mant & ((1 << fmt.f) - 1)))
    if inexact:
        flags |= IXC
    return result, (flags if ctl.fpexc else 0)


def _exact_zero_sign(ctl: FPCtl) -> int:
    # An exact zero sum of nonzero operands is -0 only when rounding towards minus infinity.
    return 1 if ctl.rounding is Rounding.NEGINF else 0


def _add_exact(s1: int, m1: int, e1: int, s2: int, m2: int, e2: int) -> tuple[int, int, int]:
    """The exact signed sum of two values ``(-1)**s * m * 2**e`` as (sign, mant, exp)."""
    e = min(e1, e2)
    v = (-m1 if s1 else m1) << (e1 - e)
    v += (-m2 if s2 else m2) << (e2 - e)
    return (1 if v < 0 else 0), abs(v), e


def _unpack_two(op1: int, op2: int, fmt: Fmt, ctl: FPCtl) -> tuple[Unpacked, Unpacked, int, tuple[int, int] | None]:
    """The shared start of FPAdd and FPMul: both operands unpacked (their input flags ORed) and
    FPProcessNaNs' result, (value, flags), when either is a NaN (else None)."""
    u1, f1 = fp_unpack(op1, fmt, ctl)
    u2, f2 = fp_unpack(op2, fmt, ctl)
    return u1, u2, f1 | f2, fp_process_nans([(u1, op1), (u2, op2)], fmt, ctl)


def fp_add(op1: int, op2: int, fmt: Fmt, ctl: FPCtl) -> tuple[int, int]:
    """FPAdd."""
    u1, u2, flags, nan = _unpack_two(op1, op2, fmt, ctl)
    if nan is not None:
        return nan[0], flags | nan[1]
    inf1, inf2 = u1.type is FPType.INFINITY, u2.type is FPType.INFINITY
    if inf1 and inf2 and u1.sign != u2.sign:
        return fmt.default_nan(), flags | (IOC if ctl.fpexc else 0)
    if inf1 or inf2:
        return fmt.infinity(u1.sign if inf1 else u2.sign), flags
    z1, z2 = u1.type is FPType.ZERO, u2.type is FPType.ZERO
    if z1 and z2:
        return fmt.zero(u1.sign if u1.sign == u2.sign else _exact_zero_sign(ctl)), flags
    if z1:
        s, m, e = u2.sign, u2.mant, u2.exp
    elif z2:
        s, m, e = u1.sign, u1.mant, u1.exp
    else:
        s, m, e = _add_exact(u1.sign, u1.mant, u1.exp, u2.sign, u2.mant, u2.exp)
    if m == 0:
        return fmt.zero(_exact_zero_sign(ctl)), flags
    r, rf = fp_round(s, m, e, fmt, ctl)
    return r, flags | rf


def fp_mul(op1: int, op2: int, fmt: Fmt, ctl: FPCtl) -> tuple[int, int]:
    """FPMul."""
    u1, u2, flags, nan = _unpack_two(op1, op2, fmt, ctl)
    if nan is not None:
        return nan[0], flags | nan[1]
    inf1, inf2 = u1.type is FPType.INFINITY, u2.type is FPType.INFINITY
    z1, z2 = u1.type is FPType.ZERO, u2.type is FPType.ZERO
    sign = u1.sign ^ u2.sign
    if (inf1 and z2) or (z1 and inf2):
        return fmt.default_nan(), flags | (IOC if ctl.fpexc else 0)
    if inf1 or inf2:
        return fmt.infinity(sign), flags
    if z1 or z2:
        return fmt.zero(sign), flags
    r, rf = fp_round(sign, u1.mant * u2.mant, u1.exp + u2.exp, fmt, ctl)
    return r, flags | rf


def fp_muladd(addend: int, op1: int, op2: int, fmt: Fmt, ctl: FPCtl) -> tuple[int, int]:
    """FPMulAdd: ``addend + op1 * op2`` with a single rounding."""
    ua, fa = fp_unpack(addend, fmt, ctl)
    u1, f1 = fp_unpack(op1, fmt, ctl)
    u2, f2 = fp_unpack(op2, fmt, ctl)
    flags = fa | f1 | f2
    inf1, inf2 = u1.type is FPType.INFINITY, u2.type is FPType.INFINITY
    z1, z2 = u1.type is FPType.ZERO, u2.type is FPType.ZERO
    # A quiet-NaN addend does not hide an infinity-times-zero product: that is still an
    # Invalid Operation and gives the default NaN, not the addend's payload.
    if ua.type is FPType.QNAN and ((inf1 and z2) or (z1 and inf2)):
        return fmt.default_nan(), flags | (IOC if ctl.fpexc else 0)
    nan = fp_process_nans([(ua, addend), (u1, op1), (u2, op2)], fmt, ctl)
    if nan is not None:
        return nan[0], flags | nan[1]
    inf_a, z_a = ua.type is FPType.INFINITY, ua.type is FPType.ZERO
    sign_p = u1.sign ^ u2.sign
    inf_p, z_p = inf1 or inf2, z1 or z2
    if (inf1 and z2) or (z1 and inf2) or (inf_a and inf_p and ua.sign != sign_p):
        return fmt.default_nan(), flags | (IOC if ctl.fpexc else 0)
    if inf_a or inf_p:
        return fmt.infinity(ua.sign if inf_a else sign_p), flags
    if z_a and z_p:
        return fmt.zero(ua.sign if ua.sign == sign_p else _exact_zero_sign(ctl)), flags
    if z_p:
        s, m, e = ua.sign, ua.mant, ua.exp
    elif z_a:
        s, m, e = sign_p, u1.mant * u2.mant, u1.exp + u2.exp
    else:
        s, m, e = _add_exact(ua.sign, ua.mant, ua.exp, sign_p, u1.mant * u2.mant, u1.exp + u2.exp)
    if m == 0:
        return fmt.zero(_exact_zero_sign(ctl)), flags
    r, rf = fp_round(s, m, e, fmt, ctl)
    return r, flags | rf


def fp_convert_bf(op: int, ctl: FPCtl) -> tuple[int, int]:
    """FPConvertBF: single precision to BFloat16 under FPCR (rounding mode, FZ, DN), with the
    flags a narrowing conversion records.  A NaN keeps its sign and top payload bits (quietened)
    unless FPCR.DN asks for the default NaN."""
    u, flags = fp_unpack(op, F32, ctl)
    if u.type in (FPType.QNAN, FPType.SNAN):
        if ctl.dn:
            r = BF16.default_nan()
        else:
            r = ((op >> 16) & 0xFFFF) | (1 << (BF16.f - 1))
        return r, flags | (IOC if u.type is FPType.SNAN and ctl.fpexc else 0)
    if u.type is FPType.INFINITY:
        return BF16.infinity(u.sign), flags
    if u.type is FPType.ZERO:
        return BF16.zero(u.sign), flags
    r, rf = fp_round(u.sign, u.mant, u.exp, BF16, ctl)
    return r, flags | rf
