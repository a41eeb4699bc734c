"""The exact Arm floating-point arithmetic under the matrix/BFloat16 instructions
(machine/sve2/fparith.py): double-precision add/multiply in round-to-nearest checked against
the host's IEEE doubles on random bit patterns, single precision against numpy's float32, and
hand-worked cases for the corners (ties, directed rounding, flush-to-zero, overflow, NaN rules)."""
from __future__ import annotations

import math
import random
import struct

import numpy as np
import pytest

from emukern.machine.sve2.fparith import (BF16, BF16_DOT_CTL, F32, F64, IDC, IOC, IXC, OFC,
                                          UFC, FPCtl, Rounding, fp_add, fp_convert_bf, fp_mul,
                                          fp_muladd)

RNE = FPCtl(Rounding.TIEEVEN, fz=False, dn=False)


def _rand_bits(rng: random.Random, e: int, f: int) -> int:
    emax = (1 << e) - 1
    r = rng.random()
    ef = (0 if r < 0.1 else emax - 1 - rng.getrandbits(2) if r < 0.2
          else rng.randint(1, 3) if r < 0.3 else rng.randint(emax // 2 - 30, emax // 2 + 30))
    return (rng.getrandbits(1) << (e + f)) | (ef << f) | rng.getrandbits(f)


def _d(bits: int) -> float:
    return struct.unpack("<d", bits.to_bytes(8, "little"))[0]


def _dbits(x: float) -> int:
    return int.from_bytes(struct.pack("<d", x), "little")


@pytest.mark.parametrize("op", ["add", "mul"])
def test_f64_round_to_nearest_matches_host_doubles(op: str) -> None:
    rng = random.Random(64)
    for _ in range(4000):
        a, b = _rand_bits(rng, 11, 52), _rand_bits(rng, 11, 52)
        if op == "add":
            got, _ = fp_add(a, b, F64, RNE)
            want = _d(a) + _d(b)
        else:
            got, _ = fp_mul(a, b, F64, RNE)
            want = _d(a) * _d(b)
        assert got == _dbits(want), (hex(a), hex(b))


@pytest.mark.parametrize("op", ["add", "mul"])
def test_f32_round_to_nearest_matches_numpy(op: str) -> None:
    rng = random.Random(32)
    a = np.array([_rand_bits(rng, 8, 23) for _ in range(4000)], dtype=np.uint32)
    b = np.array([_rand_bits(rng, 8, 23) for _ in range(4000)], dtype=np.uint32)
    with np.errstate(all="ignore"):
        fa, fb = a.view(np.float32), b.view(np.float32)
        want = (fa + fb if op == "add" else fa * fb).view(np.uint32)
    fn = fp_add if op == "add" else fp_mul
    for x, y, w in zip(a.tolist(), b.tolist(), want.tolist()):
        assert fn(x, y, F32, RNE)[0] == w, (hex(x), hex(y))


def _ctl(r: Rounding, fz: bool = False, dn: bool = False) -> FPCtl:
    return FPCtl(r, fz, dn)


@pytest.mark.parametrize("src,rounding,want,flags", [
    (0x3F808000, Rounding.TIEEVEN, 0x3F80, IXC),       # tie, even stays
    (0x3F818000, Rounding.TIEEVEN, 0x3F82, IXC),       # tie, odd rounds up
    (0x3F808001, Rounding.TIEEVEN, 0x3F81, IXC),       # above the tie
    (0xBF80FFFF, Rounding.ZERO, 0xBF80, IXC),
    (0x3F800001, Rounding.POSINF, 0x3F81, IXC),
    (0xBF800001, Rounding.POSINF, 0xBF80, IXC),
    (0xBF800001, Rounding.NEGINF, 0xBF81, IXC),
    (0x3F800000, Rounding.NEGINF, 0x3F80, 0),           # exact
    (0x7F7FFFFF, Rounding.TIEEVEN, 0x7F80, OFC | IXC),   # rounds past the largest bf16
    (0x7F7FFFFF, Rounding.ZERO, 0x7F7F, IXC),            # truncates: no overflow
    (0xFF7FFFFF, Rounding.POSINF, 0xFF7F, IXC),
    (0x007FFFFF, Rounding.TIEEVEN, 0x0080, UFC | IXC),   # tiny before rounding: underflow
    (0x00400000, Rounding.TIEEVEN, 0x0040, 0),           # exact subnormal: no underflow
    (0x00000001, Rounding.POSINF, 0x0001, UFC | IXC),
    (0x7F800001, Rounding.TIEEVEN, 0x7FC0, IOC),          # signalling NaN quietened
    (0xFFC12345, Rounding.TIEEVEN, 0xFFC1, 0),            # quiet NaN keeps sign and payload top
])
def test_bfcvt_rounding_and_flags(src: int, rounding: Rounding, want: int, flags: int) -> None:
    assert fp_convert_bf(src, _ctl(rounding)) == (want, flags)


def test_overflow_in_directed_modes() -> None:
    big = 0x7F000000                                      # 2^127: its square overflows
    assert fp_mul(big, big, F32, _ctl(Rounding.ZERO)) == (F32.max_normal(0), OFC | IXC)
    assert fp_mul(big, big | 1 << 31, F32, _ctl(Rounding.POSINF)) == (F32.max_normal(1),
                                                                       OFC | IXC)
    assert fp_mul(big, big | 1 << 31, F32, _ctl(Rounding.NEGINF)) == (F32.infinity(1),
                                                                       OFC | IXC)


def test_bfcvt_fz_and_dn() -> None:
    # FZ: a denormal input reads as zero (IDC), a result that would be tiny flushes (UFC only).
    assert fp_convert_bf(0x80400000, _ctl(Rounding.TIEEVEN, fz=True)) == (0x8000, IDC)
    assert fp_convert_bf(0x00800000, _ctl(Rounding.TIEEVEN, fz=True)) == (0x0080, 0)
    assert fp_convert_bf(0xFFC12345, _ctl(Rounding.TIEEVEN, dn=True)) == (0x7FC0, 0)


def test_exact_zero_sign_follows_rounding_mode() -> None:
    one, mone = 0x3F800000, 0xBF800000
    assert fp_add(one, mone, F32, _ctl(Rounding.TIEEVEN))[0] == 0
    assert fp_add(one, mone, F32, _ctl(Rounding.NEGINF))[0] == 0x80000000
    assert fp_muladd(mone, one, one, F32, _ctl(Rounding.NEGINF))[0] == 0x80000000
    # Same-signed zeros keep their sign in every mode.
    assert fp_add(0x80000000, 0x80000000, F32, _ctl(Rounding.TIEEVEN))[0] == 0x80000000


def test_muladd_nan_rules() -> None:
    inf, zero, qnan, snan = 0x7F800000, 0, 0x7FC00001, 0x7F800002
    # infinity x zero with a quiet-NaN addend is still invalid: default NaN, not the addend.
    assert fp_muladd(qnan, inf, zero, F32, RNE) == (F32.default_nan(), IOC)
    # Otherwise signalling NaNs come first, in the order addend, op1, op2.
    assert fp_muladd(qnan, snan, 0x3F800000, F32, RNE) == (0x7FC00002, IOC)
    assert fp_muladd(qnan | 4, 0x3F800000, qnan, F32, RNE) == (qnan | 4, 0)
    assert fp_muladd(0xFF800000, inf, 0x3F800000, F32, RNE) == (F32.default_nan(), IOC)


def test_muladd_is_fused() -> None:
    # (1 + 2^-23)^2 - (1 + 2^-22) = 2^-46: exact only with a single rounding.
    x = 0x3F800001
    r, f = fp_muladd(0xBF800002, x, x, F32, RNE)
    assert (r, f) == (0x28800000, 0) and math.ldexp(1, -46) == struct.unpack(
        "<f", r.to_bytes(4, "little"))[0]


def test_bf16_dot_environment() -> None:
    """The BFloat16 dot-product environment: denormal inputs read as zero with no flag,
    round to odd, overflow to infinity, tiny results flush to zero, never a flag."""
    ctl = BF16_DOT_CTL
    assert fp_mul(0x00400000, 0x3F800000, F32, ctl) == (0, 0)
    assert fp_add(0x3F800000, 0x33800000, F32, ctl) == (0x3F800001, 0)   # 1 + 2^-24 -> odd
    assert fp_mul(0x7F000000, 0x7F000000, F32, ctl) == (0x7F800000, 0)
    assert fp_mul(0x00800000, 0x3F000000, F32, ctl) == (0, 0)
    assert fp_add(0x7F800001, 0x3F800000, F32, ctl) == (F32.default_nan(), 0)
    assert BF16.default_nan() == 0x7FC0
