"""Element-wise integer operations, one Python function per operation.

Every function takes two equally long iterables of operands and SEW, and returns a list of
*unsigned* SEW-bit results.  Whether an operand arrives signed or unsigned is declared next to
the function in :data:`BINOPS` (the caller unpacks the register bytes accordingly), so the
bodies stay one list comprehension each - that is what keeps the unit fast.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

Ints = Iterable[int]
BinFn = Callable[[Ints, Ints, int], list[int]]
CmpFn = Callable[[Ints, Ints], list[bool]]


def _add(a: Ints, b: Ints, sew: int) -> list[int]:
    m = (1 << sew) - 1
    return [(p + q) & m for p, q in zip(a, b)]


def _sub(a: Ints, b: Ints, sew: int) -> list[int]:
    m = (1 << sew) - 1
    return [(p - q) & m for p, q in zip(a, b)]


def _rsub(a: Ints, b: Ints, sew: int) -> list[int]:
    m = (1 << sew) - 1
    return [(q - p) & m for p, q in zip(a, b)]


def _and(a: Ints, b: Ints, sew: int) -> list[int]:
    return [p & q for p, q in zip(a, b)]


def _or(a: Ints, b: Ints, sew: int) -> list[int]:
    return [p | q for p, q in zip(a, b)]


def _xor(a: Ints, b: Ints, sew: int) -> list[int]:
    return [p ^ q for p, q in zip(a, b)]


def _sll(a: Ints, b: Ints, sew: int) -> list[int]:
    m = (1 << sew) - 1
    s = sew - 1  # only the low log2(SEW) bits of the shift amount count
    return [(p << (q & s)) & m for p, q in zip(a, b)]


def _srl(a: Ints, b: Ints, sew: int) -> list[int]:
    s = sew - 1
    return [p >> (q & s) for p, q in zip(a, b)]


def _sra(a: Ints, b: Ints, sew: int) -> list[int]:  # a signed
    m = (1 << sew) - 1
    s = sew - 1
    return [(p >> (q & s)) & m for p, q in zip(a, b)]


def _mul(a: Ints, b: Ints, sew: int) -> list[int]:
    m = (1 << sew) - 1
    return [(p * q) & m for p, q in zip(a, b)]


def _mulh(a: Ints, b: Ints, sew: int) -> list[int]:  # signed x signed, or signed x unsigned
    m = (1 << sew) - 1
    return [((p * q) >> sew) & m for p, q in zip(a, b)]


def _divu(a: Ints, b: Ints, sew: int) -> list[int]:
    m = (1 << sew) - 1
    # RISC-V: x / 0 = all ones
    return [p // q if q else m for p, q in zip(a, b)]


def _remu(a: Ints, b: Ints, sew: int) -> list[int]:
    # RISC-V: x % 0 = x
    return [p % q if q else p for p, q in zip(a, b)]


def _sdiv1(p: int, q: int, m: int) -> int:
    if q == 0:
        return m                      # -1
    if q == -1:
        return -p & m                 # also covers MIN / -1 = MIN after wrapping
    r = abs(p) // abs(q)              # C-style truncation toward zero
    return (-r if (p < 0) != (q < 0) else r) & m


def _srem1(p: int, q: int, m: int) -> int:
    if q == 0:
        return p & m
    if q == -1:
        return 0                      # MIN % -1 = 0
    r = abs(p) % abs(q)               # remainder takes the dividend's sign
    return (-r if p < 0 else r) & m


def _div(a: Ints, b: Ints, sew: int) -> list[int]:
    m = (1 << sew) - 1
    return [_sdiv1(p, q, m) for p, q in zip(a, b)]


def _rem(a: Ints, b: Ints, sew: int) -> list[int]:
    m = (1 << sew) - 1
    return [_srem1(p, q, m) for p, q in zip(a, b)]


def _min(a: Ints, b: Ints, sew: int) -> list[int]:
    m = (1 << sew) - 1
    return [(p if p < q else q) & m for p, q in zip(a, b)]


def _max(a: Ints, b: Ints, sew: int) -> list[int]:
    m = (1 << sew) - 1
    return [(p if p > q else q) & m for p, q in zip(a, b)]


# name -> (function, vs2 operand signed, vs1/scalar operand signed)
BINOPS: dict[str, tuple[BinFn, bool, bool]] = {
    "vadd": (_add, False, False),
    "vsub": (_sub, False, False),
    "vrsub": (_rsub, False, False),
    "vand": (_and, False, False),
    "vor": (_or, False, False),
    "vxor": (_xor, False, False),
    "vsll": (_sll, False, False),
    "vsrl": (_srl, False, False),
    "vsra": (_sra, True, False),
    "vmul": (_mul, False, False),
    "vmulh": (_mulh, True, True),
    "vmulhu": (_mulh, False, False),
    "vmulhsu": (_mulh, True, False),
    "vdivu": (_divu, False, False),
    "vdiv": (_div, True, True),
    "vremu": (_remu, False, False),
    "vrem": (_rem, True, True),
    "vminu": (_min, False, False),
    "vmin": (_min, True, True),
    "vmaxu": (_max, False, False),
    "vmax": (_max, True, True),
}


def _eq(a: Ints, b: Ints) -> list[bool]:
    return [p == q for p, q in zip(a, b)]


def _ne(a: Ints, b: Ints) -> list[bool]:
    return [p != q for p, q in zip(a, b)]


def _lt(a: Ints, b: Ints) -> list[bool]:
    return [p < q for p, q in zip(a, b)]


def _le(a: Ints, b: Ints) -> list[bool]:
    return [p <= q for p, q in zip(a, b)]


def _gt(a: Ints, b: Ints) -> list[bool]:
    return [p > q for p, q in zip(a, b)]


# name -> (predicate on (vs2 element, vs1/scalar), operands signed)
CMPOPS: dict[str, tuple[CmpFn, bool]] = {
    "vmseq": (_eq, False),
    "vmsne": (_ne, False),
    "vmsltu": (_lt, False),
    "vmslt": (_lt, True),
    "vmsleu": (_le, False),
    "vmsle": (_le, True),
    "vmsgtu": (_gt, False),
    "vmsgt": (_gt, True),
}


def _rsum(vals: list[int], init: int, sew: int) -> int:
    return (init + sum(vals)) & ((1 << sew) - 1)


def _rand(vals: list[int], init: int, sew: int) -> int:
    for v in vals:
        init &= v
    return init


def _ror(vals: list[int], init: int, sew: int) -> int:
    for v in vals:
        init |= v
    return init


def _rxor(vals: list[int], init: int, sew: int) -> int:
    for v in vals:
        init ^= v
    return init


def _rmin(vals: list[int], init: int, sew: int) -> int:
    return min(init, *vals) & ((1 << sew) - 1) if vals else init & ((1 << sew) - 1)


def _rmax(vals: list[int], init: int, sew: int) -> int:
    return max(init, *vals) & ((1 << sew) - 1) if vals else init & ((1 << sew) - 1)


# name -> (fold(active vs2 elements, vs1[0], sew) -> unsigned result, operands signed)
REDOPS: dict[str, tuple[Callable[[list[int], int, int], int], bool]] = {
    "vredsum": (_rsum, False),
    "vredand": (_rand, False),
    "vredor": (_ror, False),
    "vredxor": (_rxor, False),
    "vredminu": (_rmin, False),
    "vredmin": (_rmin, True),
    "vredmaxu": (_rmax, False),
    "vredmax": (_rmax, True),
}

# mask-register logical ops on whole big integers: (vs2, vs1) -> result bits (unbounded)
MASKOPS: dict[str, Callable[[int, int], int]] = {
    "vmandn": lambda a, b: a & ~b,
    "vmand": lambda a, b: a & b,
    "vmor": lambda a, b: a | b,
    "vmxor": lambda a, b: a ^ b,
    "vmorn": lambda a, b: a | ~b,
    "vmnand": lambda a, b: ~(a & b),
    "vmnor": lambda a, b: ~(a | b),
    "vmxnor": lambda a, b: ~(a ^ b),
}


# ---- whole-register fast paths ------------------------------------------------------------
# For unmasked add/sub/logic the unit treats the body bytes of a register group as one big
# little-endian integer and works on all lanes at once ("SIMD within a register"): the carry
# out of each lane is cut off by handling each lane's top bit separately.  ``h`` has only the
# top bit of every lane set, ``full`` has every bit of the body set.

def _swar_add(a: int, b: int, h: int, full: int) -> int:
    low = full ^ h
    return ((a & low) + (b & low)) ^ ((a ^ b) & h)


def _swar_sub(a: int, b: int, h: int, full: int) -> int:
    low = full ^ h
    return (((a | h) - (b & low)) ^ ((a ^ ~b) & h)) & full


def _swar_rsub(a: int, b: int, h: int, full: int) -> int:
    return _swar_sub(b, a, h, full)


SWAR: dict[str, Callable[[int, int, int, int], int]] = {
    "vadd": _swar_add,
    "vsub": _swar_sub,
    "vrsub": _swar_rsub,
    "vand": lambda a, b, h, full: a & b,
    "vor": lambda a, b, h, full: a | b,
    "vxor": lambda a, b, h, full: a ^ b,
}
