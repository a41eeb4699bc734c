"""Micro-benchmark of the vector unit (the lead wires it into a CLI).

``bench_rvv()`` times ``RVVUnit.execute`` directly, with dict-backed scalar registers and a
bytearray-backed memory, so the numbers are the unit's own cost per instruction.
"""
from __future__ import annotations

import time

from .unit import RVVUnit


class _Regs:
    def __init__(self) -> None:
        self.r = [0] * 32

    def read(self, i: int) -> int:
        return self.r[i]

    def write(self, i: int, value: int) -> None:
        if i:
            self.r[i] = value & 0xFFFFFFFFFFFFFFFF


class _Mem:
    def __init__(self, base: int, size: int) -> None:
        self.base = base
        self.buf = bytearray(size)

    def load(self, addr: int, size: int) -> bytes:
        o = addr - self.base
        return bytes(self.buf[o:o + size])

    def store(self, addr: int, data: bytes) -> None:
        o = addr - self.base
        self.buf[o:o + len(data)] = data


def _vsetvli(sew: int, lmul_code: int) -> int:
    zimm = lmul_code | ((sew.bit_length() - 4) << 3) | 0xC0
    return (zimm << 20) | (0 << 15) | (7 << 12) | (5 << 7) | 0x57      # vsetvli t0, x0, ...


VADD_VV_V8_V16_V24 = 1 << 25 | 24 << 15 | 16 << 20 | 8 << 7 | 0x57
VLE32_V8_A0 = (1 << 25) | (10 << 15) | (6 << 12) | (8 << 7) | 0x07
VSE32_V8_A0 = (1 << 25) | (10 << 15) | (6 << 12) | (8 << 7) | 0x27


def _time(u: RVVUnit, word: int, x: _Regs, mem: _Mem, n: int) -> float:
    ex = u.execute
    ex(word, x, mem)
    t0 = time.perf_counter()
    for _ in range(n):
        ex(word, x, mem)
    return (time.perf_counter() - t0) / n * 1e6


def bench_rvv(vlen: int = 256, n: int = 20000) -> dict[str, float]:
    """Microseconds per instruction for e32 m1/m8 vadd.vv and vle32.v/vse32.v."""
    u = RVVUnit(vlen=vlen)
    x = _Regs()
    mem = _Mem(0x10000, 8 * u.vlenb * 2)
    x.r[10] = 0x10000
    out: dict[str, float] = {}
    for label, code in (("m1", 0), ("m8", 3)):
        u.execute(_vsetvli(32, code), x, mem)
        out[f"vadd.vv e32 {label}"] = _time(u, VADD_VV_V8_V16_V24, x, mem, n)
        out[f"vle32.v e32 {label}"] = _time(u, VLE32_V8_A0, x, mem, n)
        out[f"vse32.v e32 {label}"] = _time(u, VSE32_V8_A0, x, mem, n)
    return out


if __name__ == "__main__":
    for k, v in bench_rvv().items():
        print(f"{k:20s} {v:6.2f} us")
