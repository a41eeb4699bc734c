"""SVE2 character-match, histogram, permute and address-hazard instructions (FEAT_SVE2):

* MATCH, NMATCH (B/H): per active element of Zn, whether any element of the same 128-bit
  segment of Zm equals it (NMATCH: none does); zeroing predicate result, NZCV as PTEST with Pg;
* HISTCNT (S/D): per active element, how many active elements at or below it in Zm equal it;
  HISTSEG (B): per byte, how many bytes of the same 128-bit segment of Zm equal it;
* TBL with a two-register table {Zn, Zn+1} and TBX (one register, out-of-range indexes keep
  the destination element), B/H/S/D;
* EXT and SPLICE in their constructive forms, whose source is the pair {Zn, Zn+1};
* ZIP1/ZIP2, UZP1/UZP2, TRN1/TRN2 on quadwords (FEAT_F64MM);
* WHILEWR, WHILERW: the predicate of the elements that can be processed together without a
  read-after-write / write-after-read hazard between two pointers (NZCV as PTEST).
"""
from __future__ import annotations

from .elems import active, pack, sext, size, unpack, zd, zm, zn
from .state import Sve2Insn, Sve2Undefined, SveRegs


def pred_test(result: int, gov: int, es: int, n: int) -> int:
    """NZCV of PTEST: N = the first element active in ``gov`` is true in ``result``; Z = none
    of the active ones is; C = the last active one is not; V = 0."""
    act = [e for e in range(n) if (gov >> (e * es)) & 1]
    if not act:
        return 0b0110                                 # Z and C set, as PTEST of an empty governor
    first = (result >> (act[0] * es)) & 1
    last = (result >> (act[-1] * es)) & 1
    anyv = any((result >> (e * es)) & 1 for e in act)
    return (first << 3) | (int(not anyv) << 2) | (int(not last) << 1)


def _match(negate: bool):
    def run(w: int, r: SveRegs) -> None:
        s = size(w)
        if s > 1:
            raise Sve2Undefined("match/nmatch with size 1x")
        es = 1 << s
        per_seg = 16 // es
        a = unpack(r.z[zn(w)], es)
        b = unpack(r.z[zm(w)], es)
        gov = r.p[(w >> 10) & 7]
        n = len(a)
        res = 0
        for e, on in enumerate(active(gov, es, n)):
            if on:
                base = (e // per_seg) * per_seg
                hit = a[e] in b[base:base + per_seg]
                if hit != negate:
                    res |= 1 << (e * es)
        r.set_p(w & 15, res)
        r.set_nzcv(pred_test(res, gov, es, n))
    return run


def histcnt(w: int, r: SveRegs) -> None:
    s = size(w)
    if s < 2:
        raise Sve2Undefined("histcnt with size 0x")
    es = 1 << s
    a = unpack(r.z[zn(w)], es)
    b = unpack(r.z[zm(w)], es)
    act = active(r.p[(w >> 10) & 7], es, len(a))
    out = [0] * len(a)
    for e, on in enumerate(act):
        if on:
            out[e] = sum(1 for i in range(e + 1) if act[i] and b[i] == a[e])
    r.set_z(zd(w), pack(out, es))


def histseg(w: int, r: SveRegs) -> None:
    if size(w) != 0:
        raise Sve2Undefined("histseg with size != 00")
    a, b = r.z[zn(w)], r.z[zm(w)]
    out = bytearray(r.vl)
    for e in range(r.vl):
        base = e & ~15
        out[e] = b[base:base + 16].count(a[e])
    r.set_z(zd(w), out)


def _tbl(two: bool):
    def run(w: int, r: SveRegs) -> None:
        es = 1 << size(w)
        n1 = zn(w)
        table = unpack(r.z[n1], es)
        if two:
            table += unpack(r.z[(n1 + 1) % 32], es)
        idx = unpack(r.z[zm(w)], es)
        keep = unpack(r.z[zd(w)], es)
        out = [table[i] if i < len(table) else (0 if two else keep[e]) for e, i in enumerate(idx)]
        r.set_z(zd(w), pack(out, es))
    return run


def ext2(w: int, r: SveRegs) -> None:
    pos = (((w >> 16) & 31) << 3) | ((w >> 10) & 7)
    if pos >= r.vl:
        pos = 0                                  # an offset past the vector selects Zn itself
    n1 = zn(w)
    both = bytes(r.z[n1]) + bytes(r.z[(n1 + 1) % 32])
    r.set_z(zd(w), bytearray(both[pos:pos + r.vl]))


def splice2(w: int, r: SveRegs) -> None:
    es = 1 << size(w)
    n1 = zn(w)
    a = unpack(r.z[n1], es)
    b = unpack(r.z[(n1 + 1) % 32], es)
    act = active(r.p[(w >> 10) & 7], es, len(a))
    on = [e for e, x in enumerate(act) if x]
    seg = a[on[0]:on[-1] + 1] if on else []
    out = (seg + b)[:len(a)]
    r.set_z(zd(w), pack(out, es))


def _while_hazard(rw: bool):
    def run(w: int, r: SveRegs) -> None:
        es = 1 << size(w)
        rn, rm = (w >> 5) & 31, (w >> 16) & 31
        op1 = sext(r.xreg(rn) if rn != 31 else 0, 64)
        op2 = sext(r.xreg(rm) if rm != 31 else 0, 64)
        n = r.vl // es
        # the distance in bytes decides "no hazard at all" (same address for RW, a write
        # pointer at or above the read pointer for WR); otherwise only the whole elements
        # before the overlap are safe -- none when the pointers are less than an element apart
        gap = abs(op2 - op1) if rw else op2 - op1
        all_true = gap == 0 if rw else gap <= 0
        diff = gap // es
        p = 0
        for e in range(n):
            if all_true or e < diff:
                p |= 1 << (e * es)
        r.set_p(w & 15, p)
        full = sum(1 << (e * es) for e in range(n))
        r.set_nzcv(pred_test(p, full, es, n))
    return run


def _perm_q(kind: str, part: int):
    """ZIP/UZP/TRN on 128-bit elements (FEAT_F64MM): UNDEFINED below a 256-bit vector; with an
    odd number of quadwords the interleaving forms leave the last one zero."""
    def run(w: int, r: SveRegs) -> None:
        if r.vl < 32:
            raise Sve2Undefined(f"{kind} .q with a vector length below 256 bits")
        a = unpack(r.z[zn(w)], 16)
        b = unpack(r.z[zm(w)], 16)
        n = len(a)
        pairs = n // 2
        out = [0] * n
        if kind == "uzp":
            both = a + b
            out = [both[2 * e + part] for e in range(n)]
        else:
            for q in range(pairs):
                if kind == "zip":
                    out[2 * q], out[2 * q + 1] = a[part * pairs + q], b[part * pairs + q]
                else:
                    out[2 * q], out[2 * q + 1] = a[2 * q + part], b[2 * q + part]
        r.set_z(zd(w), pack(out, 16))
    return run


PERM_Q = {"zip1": (0, "zip", 0), "zip2": (1, "zip", 1), "uzp1": (2, "uzp", 0), "uzp2": (3, "uzp", 1),
          "trn1": (6, "trn", 0), "trn2": (7, "trn", 1)}


INSNS: tuple[Sve2Insn, ...] = (
    *(Sve2Insn(f"{name}.q", 0xFFE0FC00, 0x05A00000 | (opc << 10), "svef64mm", _perm_q(kind, part))
      for name, (opc, kind, part) in PERM_Q.items()),
    Sve2Insn("match", 0xFF20E010, 0x45208000, "sve2", _match(False)),
    Sve2Insn("nmatch", 0xFF20E010, 0x45208010, "sve2", _match(True)),
    Sve2Insn("histcnt", 0xFF20E000, 0x4520C000, "sve2", histcnt),
    Sve2Insn("histseg", 0xFF20FC00, 0x4520A000, "sve2", histseg),
    Sve2Insn("tbl2", 0xFF20FC00, 0x05202800, "sve2", _tbl(True)),
    Sve2Insn("tbx", 0xFF20FC00, 0x05202C00, "sve2", _tbl(False)),
    Sve2Insn("ext2", 0xFFE0E000, 0x05600000, "sve2", ext2),
    Sve2Insn("splice2", 0xFF3FE000, 0x052D8000, "sve2", splice2),
    Sve2Insn("whilewr", 0xFF20FC10, 0x25203000, "sve2", _while_hazard(False)),
    Sve2Insn("whilerw", 0xFF20FC10, 0x25203010, "sve2", _while_hazard(True)),
)
