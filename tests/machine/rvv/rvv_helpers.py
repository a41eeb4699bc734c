"""Shared helpers for the RVV unit tests: a tiny encoder, fake registers and fake memory.

Imported as a plain module (pytest puts this directory on sys.path), so the test
directories need no __init__.py files.
"""
from __future__ import annotations

from emukern.errors import MemoryFault
from emukern.machine.rvv import RVVUnit

XMASK = (1 << 64) - 1
LMUL_CODE = {0.125: 5, 0.25: 6, 0.5: 7, 1: 0, 2: 1, 4: 2, 8: 3}
WIDTH = {8: 0, 16: 5, 32: 6, 64: 7}

OPI = {"vadd": 0x00, "vsub": 0x02, "vrsub": 0x03, "vminu": 0x04, "vmin": 0x05, "vmaxu": 0x06,
       "vmax": 0x07, "vand": 0x09, "vor": 0x0A, "vxor": 0x0B, "vrgather": 0x0C,
       "vslideup": 0x0E, "vslidedown": 0x0F, "vadc": 0x10, "vmerge": 0x17, "vmv": 0x17,
       "vmseq": 0x18, "vmsne": 0x19, "vmsltu": 0x1A, "vmslt": 0x1B, "vmsleu": 0x1C,
       "vmsle": 0x1D, "vmsgtu": 0x1E, "vmsgt": 0x1F, "vsaddu": 0x20, "vsll": 0x25,
       "vsrl": 0x28, "vsra": 0x29, "vnsrl": 0x2C}
OPM = {"vredsum": 0, "vredand": 1, "vredor": 2, "vredxor": 3, "vredminu": 4, "vredmin": 5,
       "vredmaxu": 6, "vredmax": 7, "vslide1up": 0x0E, "vslide1down": 0x0F,
       "vmandn": 0x18, "vmand": 0x19, "vmor": 0x1A, "vmxor": 0x1B, "vmorn": 0x1C,
       "vmnand": 0x1D, "vmnor": 0x1E, "vmxnor": 0x1F, "vdivu": 0x20, "vdiv": 0x21,
       "vremu": 0x22, "vrem": 0x23, "vmulhu": 0x24, "vmul": 0x25, "vmulhsu": 0x26,
       "vmulh": 0x27, "vmacc": 0x2D, "vwadd": 0x31}
F3_OPI = {"vv": 0, "vx": 4, "vi": 3, "vvm": 0, "vxm": 4, "vim": 3}
F3_OPM = {"vv": 2, "vs": 2, "mm": 2, "vx": 6}


def opv(f6: int, f3: int, vd: int, vs2: int, s1: int, vm: bool = True) -> int:
    return (f6 << 26) | (int(vm) << 25) | (vs2 << 20) | ((s1 & 31) << 15) | (f3 << 12) \
        | (vd << 7) | 0x57


def enc(mn: str, vd: int, vs2: int, s1: int, vm: bool = True) -> int:
    """Encode e.g. enc("vadd.vx", 8, 16, 10) = vadd.vx v8, v16, a0."""
    base, sfx = mn.split(".", 1)
    if base in OPI:
        return opv(OPI[base], F3_OPI[sfx], vd, vs2, s1, vm)
    return opv(OPM[base], F3_OPM[sfx], vd, vs2, s1, vm)


def vmem(load: bool, eew: int, vd: int, rs1: int, mop: int = 0, sub: int = 0, nf: int = 0,
         vm: bool = True) -> int:
    return (nf << 29) | (mop << 26) | (int(vm) << 25) | (sub << 20) | (rs1 << 15) \
        | (WIDTH[eew] << 12) | (vd << 7) | (0x07 if load else 0x27)


def vsetvli(rd: int, rs1: int, sew: int, lmul: float, ta: bool = True, ma: bool = True) -> int:
    zimm = LMUL_CODE[lmul] | ((sew.bit_length() - 4) << 3) | (int(ta) << 6) | (int(ma) << 7)
    return (zimm << 20) | (rs1 << 15) | (7 << 12) | (rd << 7) | 0x57


def vtype_of(sew: int, lmul: float, ta: bool = True, ma: bool = True) -> int:
    return LMUL_CODE[lmul] | ((sew.bit_length() - 4) << 3) | (int(ta) << 6) | (int(ma) << 7)


def csr_insn(f3: int, rd: int, csr: int, rs1: int) -> int:
    return (csr << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | 0x73


class Regs:
    """Scalar register file double."""

    def __init__(self) -> None:
        self.r = [0] * 32

    def read(self, i: int) -> int:
        return self.r[i] if i else 0

    def write(self, i: int, value: int) -> None:
        if i:
            self.r[i] = value & XMASK


class Mem:
    """Flat memory [base, base+size); anything outside, or touching an address in
    ``faults``, raises MemoryFault.  ``accesses`` counts calls."""

    def __init__(self, base: int = 0x10000, size: int = 0x4000) -> None:
        self.base = base
        self.buf = bytearray(size)
        self.faults: set[int] = set()
        self.accesses = 0

    def _check(self, addr: int, size: int, access: str) -> int:
        self.accesses += 1
        off = addr - self.base
        if off < 0 or off + size > len(self.buf):
            raise MemoryFault(addr, access, size)
        for f in self.faults:
            if addr <= f < addr + size:
                raise MemoryFault(f, access, size)
        return off

    def load(self, addr: int, size: int) -> bytes:
        off = self._check(addr, size, "r")
        return bytes(self.buf[off:off + size])

    def store(self, addr: int, data: bytes) -> None:
        off = self._check(addr, len(data), "w")
        self.buf[off:off + len(data)] = data


def machine(vlen: int = 256) -> tuple[RVVUnit, Regs, Mem]:
    return RVVUnit(vlen=vlen), Regs(), Mem()


def setvl(u: RVVUnit, x: Regs, mem: Mem, sew: int, lmul: float, avl: int | None = None,
          ta: bool = True, ma: bool = True) -> int:
    """vsetvli t0, a0, e<sew>, m<lmul>; AVL=VLMAX when avl is None.  Returns vl."""
    if avl is None:
        u.execute(vsetvli(5, 0, sew, lmul, ta, ma), x, mem)
    else:
        x.write(10, avl)
        u.execute(vsetvli(5, 10, sew, lmul, ta, ma), x, mem)
    return u.vl


def fill(u: RVVUnit, reg: int, sew: int, values: list[int]) -> None:
    """Write elements (unsigned or negative) from element 0 of register group ``reg``."""
    eb = sew // 8
    data = b"".join((v & ((1 << sew) - 1)).to_bytes(eb, "little") for v in values)
    o = reg * u.vlenb
    u.v[o:o + len(data)] = data


def signed(v: int, sew: int) -> int:
    return v - (1 << sew) if v >> (sew - 1) else v


def vlmax(vlen: int, sew: int, lmul: float) -> int:
    return int(vlen * lmul) // sew
