"""SVE2 integer instructions of the SVE2 unit (FEAT_SVE2 unless noted).

Implemented (every element size the encoding allows):

* SQABS, SQNEG (integer unary, predicated, merging): signed saturating absolute value /
  negation; saturation does not touch FPSR.QC (SVE has no sticky saturation flag).
* The bitwise ternary class, unpredicated, on the whole vector: EOR3, BCAX, BSL, BSL1N, BSL2N,
  NBSL; and XAR (exclusive-or and rotate right by immediate, B/H/S/D).
* PMUL (vectors, .B) and PMULLB/PMULLT (polynomial multiply long, bottom/top: .H from .B, .D
  from .S, and .Q from .D which needs FEAT_SVE_PMULL128, ID_AA64ZFR0_EL1.AES = 2).
* WHILEGE, WHILEGT, WHILEHI, WHILEHS (predicate from a decrementing count, W or X operands,
  sets NZCV as PTEST does).
"""
from __future__ import annotations

from .elems import active, clmul, pack, ror, sext, size, unpack, zd, zm, zn
from .state import Sve2Insn, Sve2Undefined, SveRegs


# ---- SQABS / SQNEG ---------------------------------------------------------------------------
def _sat_unary(neg: bool):
    def run(w: int, r: SveRegs) -> None:
        es = 1 << size(w)
        bits = 8 * es
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        src = unpack(r.z[zn(w)], es)
        dst = unpack(r.z[zd(w)], es)
        act = active(r.p[(w >> 10) & 7], es, len(src))
        for i, a in enumerate(act):
            if a:
                v = sext(src[i], bits)
                v = -v if (neg or v < 0) else v
                dst[i] = min(max(v, lo), hi)
        r.set_z(zd(w), pack(dst, es))
    return run


# ---- bitwise ternary ---------------------------------------------------------------------------
def _ternary(op):
    def run(w: int, r: SveRegs) -> None:
        bits = 8 * r.vl
        m = (1 << bits) - 1
        d = int.from_bytes(r.z[zd(w)], "little")
        mm = int.from_bytes(r.z[zm(w)], "little")
        k = int.from_bytes(r.z[zn(w)], "little")       # Zk is in the Zn field
        r.set_z(zd(w), (op(d, mm, k, m) & m).to_bytes(r.vl, "little"))
    return run


TERNARY = {
    # name: (value, op(dn, m, k, ones))
    "eor3": (0x04203800, lambda d, m, k, o: d ^ m ^ k),
    "bcax": (0x04603800, lambda d, m, k, o: d ^ (m & ~k)),
    "bsl": (0x04203C00, lambda d, m, k, o: (d & k) | (m & ~k)),
    "bsl1n": (0x04603C00, lambda d, m, k, o: ((~d) & k) | (m & ~k)),
    "bsl2n": (0x04A03C00, lambda d, m, k, o: (d & k) | ((~m) & ~k)),
    "nbsl": (0x04E03C00, lambda d, m, k, o: ~((d & k) | (m & ~k))),
}


def xar(w: int, r: SveRegs) -> None:
    tsz = (((w >> 22) & 3) << 2) | ((w >> 19) & 3)
    if tsz == 0:
        raise Sve2Undefined("xar with tsz = 0")
    es = 8 if tsz & 8 else 4 if tsz & 4 else 2 if tsz & 2 else 1
    bits = 8 * es
    sh = 2 * bits - ((tsz << 3) | ((w >> 16) & 7))
    a = unpack(r.z[zd(w)], es)
    b = unpack(r.z[zn(w)], es)                          # Zm is in the Zn field
    r.set_z(zd(w), pack([ror(x ^ y, sh, bits) for x, y in zip(a, b)], es))


# ---- polynomial multiplies --------------------------------------------------------------------
def pmul(w: int, r: SveRegs) -> None:
    a, b = r.z[zn(w)], r.z[zm(w)]
    r.set_z(zd(w), bytearray(clmul(x, y) & 0xFF for x, y in zip(a, b)))


def _pmull(top: bool):
    def run(w: int, r: SveRegs) -> None:
        s = size(w)
        if s == 2:
            raise Sve2Undefined("pmullb/pmullt with size = 10")
        es = {0: 8, 1: 1, 3: 4}[s]                 # source element size; the result is twice it
        a = unpack(r.z[zn(w)], es)[int(top)::2]
        b = unpack(r.z[zm(w)], es)[int(top)::2]
        r.set_z(zd(w), pack([clmul(x, y) for x, y in zip(a, b)], 2 * es))
    return run


# ---- WHILEGE / WHILEGT / WHILEHI / WHILEHS -----------------------------------------------------
def _pred_flags(p: int, es: int, n: int) -> int:
    """NZCV as PTEST sets it with an all-true governing predicate of the same element size:
    N = first element active, Z = none active, C = last element not active, V = 0."""
    act = active(p, es, n)
    first = act[0]
    anyv = any(act)
    last = act[-1]
    return (int(first) << 3) | (int(not anyv) << 2) | (int(not last) << 1)


def _while(unsigned: bool, strict: bool):
    def run(w: int, r: SveRegs) -> None:
        es = 1 << size(w)
        sf = (w >> 12) & 1
        bits = 64 if sf else 32
        mask = (1 << bits) - 1
        rn, rm = (w >> 5) & 31, (w >> 16) & 31
        op1 = (r.xreg(rn) if rn != 31 else 0) & mask      # register 31 is XZR here
        op2 = (r.xreg(rm) if rm != 31 else 0) & mask
        b = op2 if unsigned else sext(op2, bits)
        n = r.vl // es
        p = 0
        last = True
        for e in range(n - 1, -1, -1):
            a = op1 if unsigned else sext(op1, bits)
            last = last and (a > b if strict else a >= b)
            if last:
                p |= 1 << (e * es)
            op1 = (op1 - 1) & mask                          # the count wraps at the register width
        r.set_p(w & 15, p)
        r.set_nzcv(_pred_flags(p, es, n))
    return run


INSNS: tuple[Sve2Insn, ...] = (
    Sve2Insn("sqabs", 0xFF3FE000, 0x4408A000, "sve2", _sat_unary(False)),
    Sve2Insn("sqneg", 0xFF3FE000, 0x4409A000, "sve2", _sat_unary(True)),
    *(Sve2Insn(name, 0xFFE0FC00, value, "sve2", _ternary(op)) for name, (value, op) in TERNARY.items()),
    Sve2Insn("xar", 0xFF20FC00, 0x04203400, "sve2", xar),
    Sve2Insn("pmul", 0xFFE0FC00, 0x04206400, "sve2", pmul),
    Sve2Insn("pmullb.q", 0xFFE0FC00, 0x45006800, "svepmull128", _pmull(False)),
    Sve2Insn("pmullt.q", 0xFFE0FC00, 0x45006C00, "svepmull128", _pmull(True)),
    Sve2Insn("pmullb", 0xFF20FC00, 0x45006800, "sve2", _pmull(False)),
    Sve2Insn("pmullt", 0xFF20FC00, 0x45006C00, "sve2", _pmull(True)),
    # WHILE{GE,GT,HS,HI}: 00100101 size 1 Rm 000 sf U lt=0 Rn eq Pd  (lt bit 10 = 0: decrementing)
    Sve2Insn("whilege", 0xFF20EC10, 0x25200000, "sve2", _while(False, False)),
    Sve2Insn("whilegt", 0xFF20EC10, 0x25200010, "sve2", _while(False, True)),
    Sve2Insn("whilehs", 0xFF20EC10, 0x25200800, "sve2", _while(True, False)),
    Sve2Insn("whilehi", 0xFF20EC10, 0x25200810, "sve2", _while(True, True)),
)
