"""SVE2 shift-and-accumulate, shift-and-insert, interleaving EOR and pairwise-accumulate
instructions of the SVE2 unit (FEAT_SVE2), every element size each allows:

* SSRA, USRA, SRSRA, URSRA (shift right by immediate and accumulate, B/H/S/D, shift 1..esize);
* SRI, SLI (shift right / left by immediate and insert, B/H/S/D);
* EORBT, EORTB (interleaving exclusive OR, bottom-top / top-bottom, B/H/S/D);
* SADALP, UADALP (add and accumulate long pairwise, predicated, merging, H/S/D).
"""
from __future__ import annotations

from .elems import active, pack, sext, size, unpack, widening_sizes, zd, zm, zn
from .state import Sve2Insn, Sve2Undefined, SveRegs


def _tsz_imm(w: int) -> tuple[int, int]:
    """(element size in bytes, tsz:imm3) of the shift-by-immediate classes."""
    tsz = (((w >> 22) & 3) << 2) | ((w >> 19) & 3)
    if tsz == 0:
        raise Sve2Undefined("shift by immediate with tsz = 0")
    es = 8 if tsz & 8 else 4 if tsz & 4 else 2 if tsz & 2 else 1
    return es, (tsz << 3) | ((w >> 16) & 7)


def _shift_acc(signed: bool, rounding: bool):
    def run(w: int, r: SveRegs) -> None:
        es, ti = _tsz_imm(w)
        bits = 8 * es
        sh = 2 * bits - ti
        src = unpack(r.z[zn(w)], es)
        acc = unpack(r.z[zd(w)], es)
        out = []
        for a, x in zip(acc, src):
            v = sext(x, bits) if signed else x
            if rounding:
                v += 1 << (sh - 1)
            out.append(a + (v >> sh))
        r.set_z(zd(w), pack(out, es))
    return run


def _shift_insert(left: bool):
    def run(w: int, r: SveRegs) -> None:
        es, ti = _tsz_imm(w)
        bits = 8 * es
        ones = (1 << bits) - 1
        sh = ti - bits if left else 2 * bits - ti
        mask = (ones << sh) & ones if left else ones >> sh
        src = unpack(r.z[zn(w)], es)
        dst = unpack(r.z[zd(w)], es)
        shifted = [((x << sh) & ones) if left else x >> sh for x in src]
        r.set_z(zd(w), pack([(d & ~mask) | s for d, s in zip(dst, shifted)], es))
    return run


def _eor_interleave(top_first: bool):
    """EORBT: Zd[2i] = Zn[2i] ^ Zm[2i+1]; EORTB: Zd[2i+1] = Zn[2i+1] ^ Zm[2i]; the other
    elements of Zd are kept."""
    def run(w: int, r: SveRegs) -> None:
        es = 1 << size(w)
        a = unpack(r.z[zn(w)], es)
        b = unpack(r.z[zm(w)], es)
        d = unpack(r.z[zd(w)], es)
        s1, s2 = (1, 0) if top_first else (0, 1)
        for i in range(0, len(d), 2):
            d[i + s1] = a[i + s1] ^ b[i + s2]
        r.set_z(zd(w), pack(d, es))
    return run


def _adalp(signed: bool):
    def run(w: int, r: SveRegs) -> None:
        des, es, bits = widening_sizes(w, "sadalp/uadalp")
        src = unpack(r.z[zn(w)], es)
        acc = unpack(r.z[zd(w)], des)
        act = active(r.p[(w >> 10) & 7], des, len(acc))
        for e, on in enumerate(act):
            if on:
                x, y = src[2 * e], src[2 * e + 1]
                if signed:
                    x, y = sext(x, bits), sext(y, bits)
                acc[e] += x + y
        r.set_z(zd(w), pack(acc, des))
    return run


INSNS: tuple[Sve2Insn, ...] = (
    Sve2Insn("ssra", 0xFF20FC00, 0x4500E000, "sve2", _shift_acc(True, False)),
    Sve2Insn("usra", 0xFF20FC00, 0x4500E400, "sve2", _shift_acc(False, False)),
    Sve2Insn("srsra", 0xFF20FC00, 0x4500E800, "sve2", _shift_acc(True, True)),
    Sve2Insn("ursra", 0xFF20FC00, 0x4500EC00, "sve2", _shift_acc(False, True)),
    Sve2Insn("sri", 0xFF20FC00, 0x4500F000, "sve2", _shift_insert(False)),
    Sve2Insn("sli", 0xFF20FC00, 0x4500F400, "sve2", _shift_insert(True)),
    Sve2Insn("eorbt", 0xFF20FC00, 0x45009000, "sve2", _eor_interleave(False)),
    Sve2Insn("eortb", 0xFF20FC00, 0x45009400, "sve2", _eor_interleave(True)),
    Sve2Insn("sadalp", 0xFF3FE000, 0x4404A000, "sve2", _adalp(True)),
    Sve2Insn("uadalp", 0xFF3FE000, 0x4405A000, "sve2", _adalp(False)),
)
