"""SVE2 memory instructions of the SVE2 unit: the non-temporal gathers and scatters (FEAT_SVE2)
and the 256-bit replicating loads of FEAT_F64MM.

* LDNT1B/H/W/D, LDNT1SB/SH/SW (vector plus scalar): gather into .S (32-bit offsets) or .D
  elements from Zn[e] (zero-extended) + Xm, zero- or sign-extending each loaded value; inactive
  elements are zeroed.  The non-temporal hint changes nothing a program can observe.
* STNT1B/H/W/D (vector plus scalar): the scatter counterpart, each element truncated to the
  memory size.  Every active element's address is checked before anything is written, so a
  fault leaves memory untouched (as the QEMU oracle does).
* LD1ROB/H/W/D (scalar plus scalar, scalar plus immediate): 32 bytes under the first 256 bits of
  Pg, repeated across the whole vector; UNDEFINED below a 256-bit vector length.

A bad address raises MemoryFault out of the register file's memory callbacks: the unit turns it
into the data abort (SIGSEGV with the address of the first element that faulted).
"""
from __future__ import annotations

from .elems import active, pack, sext, unpack
from .state import Sve2Insn, Sve2Undefined, SveRegs

_M64 = (1 << 64) - 1


def _xm(r: SveRegs, w: int) -> int:
    rm = (w >> 16) & 31
    return 0 if rm == 31 else r.xreg(rm) & _M64       # register 31 is XZR for the offset


def _xn_or_sp(r: SveRegs, w: int) -> int:
    rn = (w >> 5) & 31
    return (r.sp_reg() if rn == 31 else r.xreg(rn)) & _M64       # a base register 31 is SP


def _gather(es: int):
    def run(w: int, r: SveRegs) -> None:
        msz = (w >> 23) & 3
        unsigned = (w >> 13) & 1 if es == 4 else (w >> 14) & 1    # U sits apart in the two forms
        ms = 1 << msz
        if ms > es or (ms == es and not unsigned):
            raise Sve2Undefined("ldnt1 with no such memory size / sign extension")
        base = _xm(r, w)
        offs = unpack(r.z[(w >> 5) & 31], es)
        act = active(r.p[(w >> 10) & 7], es, len(offs))
        out = [0] * len(offs)
        for e, on in enumerate(act):
            if on:
                v = int.from_bytes(r.read_mem((offs[e] + base) & _M64, ms), "little")
                out[e] = v if unsigned else sext(v, 8 * ms)
        r.set_z(w & 31, pack(out, es))
    return run


def _scatter(es: int):
    def run(w: int, r: SveRegs) -> None:
        ms = 1 << ((w >> 23) & 3)
        if ms > es:
            raise Sve2Undefined("stnt1 with a memory size above the element size")
        base = _xm(r, w)
        offs = unpack(r.z[(w >> 5) & 31], es)
        data = unpack(r.z[w & 31], es)
        act = active(r.p[(w >> 10) & 7], es, len(offs))
        todo = [((offs[e] + base) & _M64, (data[e] & ((1 << (8 * ms)) - 1)).to_bytes(ms, "little"))
                for e, on in enumerate(act) if on]
        for addr, _ in todo:
            r.probe_write(addr, ms)
        for addr, b in todo:
            r.write_mem(addr, b)
    return run


def _ld1ro(imm: bool):
    def run(w: int, r: SveRegs) -> None:
        if r.vl < 32:
            raise Sve2Undefined("ld1ro with a vector length below 256 bits")
        msz = (w >> 23) & 3
        es = 1 << msz
        base = _xn_or_sp(r, w)
        if imm:
            off = sext((w >> 16) & 15, 4) * 32
        else:
            if (w >> 16) & 31 == 31:
                raise Sve2Undefined("ld1ro (scalar plus scalar) with Rm = 31")
            off = (r.xreg((w >> 16) & 31) << msz) & _M64
        n = 32 // es
        act = active(r.p[(w >> 10) & 7], es, n)
        block = bytearray(32)
        for e, on in enumerate(act):
            if on:
                block[e * es:(e + 1) * es] = r.read_mem((base + off + e * es) & _M64, es)
        r.set_z(w & 31, block * (r.vl // 32))
    return run


INSNS: tuple[Sve2Insn, ...] = (
    Sve2Insn("ldnt1.s", 0xFE60C000, 0x84008000, "sve2", _gather(4)),
    Sve2Insn("ldnt1.d", 0xFE60A000, 0xC4008000, "sve2", _gather(8)),
    Sve2Insn("stnt1.s", 0xFE60E000, 0xE4402000, "sve2", _scatter(4)),
    Sve2Insn("stnt1.d", 0xFE60E000, 0xE4002000, "sve2", _scatter(8)),
    Sve2Insn("ld1ro.imm", 0xFE70E000, 0xA4202000, "svef64mm", _ld1ro(True)),
    Sve2Insn("ld1ro.ss", 0xFE60E000, 0xA4200000, "svef64mm", _ld1ro(False)),
)
