"""Element access helpers for the SVE2 unit's instruction modules (little-endian vectors)."""
from __future__ import annotations

from array import array
from typing import Sequence

from .state import Sve2Undefined

_CODES = {1: "B", 2: "H", 4: "I", 8: "Q"}


def unpack(vec: bytes | bytearray, esize: int) -> list[int]:
    """Elements of ``esize`` bytes (1, 2, 4, 8, 16) as unsigned ints, element 0 first."""
    if esize == 16:
        return [int.from_bytes(vec[i:i + 16], "little") for i in range(0, len(vec), 16)]
    a = array(_CODES[esize])
    a.frombytes(bytes(vec))
    return a.tolist()


def pack(elems: Sequence[int], esize: int) -> bytearray:
    if esize == 16:
        return bytearray(b"".join((e & ((1 << 128) - 1)).to_bytes(16, "little") for e in elems))
    mask = (1 << (8 * esize)) - 1
    return bytearray(array(_CODES[esize], [e & mask for e in elems]).tobytes())


def active(p: int, esize: int, n: int) -> list[bool]:
    """Which of ``n`` elements of ``esize`` bytes a predicate governs as active (the bit of each
    element's lowest byte)."""
    return [bool((p >> (i * esize)) & 1) for i in range(n)]


def sext(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def ror(v: int, sh: int, bits: int) -> int:
    mask = (1 << bits) - 1
    v &= mask
    sh %= bits
    return ((v >> sh) | (v << (bits - sh))) & mask


def rol(v: int, sh: int, bits: int) -> int:
    return ror(v, bits - sh % bits, bits)


def clmul(a: int, b: int) -> int:
    """Carry-less (polynomial over GF(2)) product."""
    r = 0
    while b:
        if b & 1:
            r ^= a
        a <<= 1
        b >>= 1
    return r


def zd(w: int) -> int:
    return w & 31


def zn(w: int) -> int:
    return (w >> 5) & 31


def zm(w: int) -> int:
    return (w >> 16) & 31


def size(w: int) -> int:
    return (w >> 22) & 3


def widening_sizes(w: int, what: str) -> tuple[int, int, int]:
    """(destination element bytes, source element bytes, source element bits) of a widening
    instruction, whose size field names the destination; size = 00 is UNDEFINED (no byte-sized
    destination to widen into)."""
    s = size(w)
    if s == 0:
        raise Sve2Undefined(f"{what} with size = 00")
    des = 1 << s
    return des, des // 2, 4 * des
