"""SVE2 narrowing and widening shifts, narrowing extracts and narrowing high-half add/subtract
of the SVE2 unit (FEAT_SVE2).

Every narrowing instruction comes as a bottom form (B: writes the even narrow elements and
zeroes the odd ones) and a top form (T: writes the odd narrow elements and keeps the even ones),
so a B/T pair interleaves two results into one vector:

* shift right narrow by immediate: SHRN, RSHRN, SQSHRN, UQSHRN, SQRSHRN, UQRSHRN, SQSHRUN,
  SQRSHRUN (B from H, H from S, S from D; shift 1..narrow element bits);
* saturating extract narrow: SQXTN, UQXTN, SQXTUN;
* add/subtract narrow high part: ADDHN, RADDHN, SUBHN, RSUBHN (the high half of each wide sum);
* shift left long by immediate: SSHLL{B,T}, USHLL{B,T} (H from B, S from H, D from S).
"""
from __future__ import annotations

from .elems import pack, sext, size, unpack, zd, zm, zn
from .state import Sve2Insn, Sve2Undefined, SveRegs


def _tsz3(w: int, what: str) -> tuple[int, int]:
    """(narrow element bytes, tsz:imm3) of the narrowing / long shift classes: tsz is bit 22
    over bits 20:19, its highest set bit names the narrow (or source) element size."""
    tsz = (((w >> 22) & 1) << 2) | ((w >> 19) & 3)
    if tsz == 0:
        raise Sve2Undefined(f"{what} with tsz = 000")
    es = 4 if tsz & 4 else 2 if tsz & 2 else 1
    return es, (tsz << 3) | ((w >> 16) & 7)


def _write_narrow(r: SveRegs, w: int, vals: list[int], es: int, top: bool) -> None:
    """Interleave narrow results into Zd: even lanes (bottom, odd ones zeroed) or odd lanes
    (top, even ones kept)."""
    if top:
        out = unpack(r.z[zd(w)], es)
        out[1::2] = vals
    else:
        out = [0] * (2 * len(vals))
        out[0::2] = vals
    r.set_z(zd(w), pack(out, es))


def _clamp(v: int, lo: int, hi: int) -> int:
    return lo if v < lo else hi if v > hi else v


# (name, bits 13:11 = op:U:R) -> (source signed, result range: "trunc" / "s" / "u", rounding)
SHIFT_NARROW: list[tuple[str, int, bool, str, bool]] = [
    ("sqshrun", 0b000, True, "u", False),
    ("sqrshrun", 0b001, True, "u", True),
    ("shrn", 0b010, False, "trunc", False),
    ("rshrn", 0b011, False, "trunc", True),
    ("sqshrn", 0b100, True, "s", False),
    ("sqrshrn", 0b101, True, "s", True),
    ("uqshrn", 0b110, False, "u", False),
    ("uqrshrn", 0b111, False, "u", True),
]


def _sat_range(kind: str, bits: int) -> tuple[int, int]:
    """The values a saturating result of ``bits`` keeps: signed ("s") or unsigned ("u")."""
    if kind == "s":
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def _range(kind: str, bits: int) -> tuple[int, int] | None:
    """Like _sat_range, or None for a truncating ("trunc") result."""
    return None if kind == "trunc" else _sat_range(kind, bits)


def _shift_narrow(signed: bool, kind: str, rounding: bool, top: bool):
    def run(w: int, r: SveRegs) -> None:
        es, ti = _tsz3(w, "shift right narrow")
        bits = 8 * es
        sh = 2 * bits - ti
        rng = _range(kind, bits)
        vals = []
        for x in unpack(r.z[zn(w)], 2 * es):
            v = sext(x, 2 * bits) if signed else x
            if rounding:
                v += 1 << (sh - 1)
            v >>= sh
            vals.append(_clamp(v, *rng) if rng else v)
        _write_narrow(r, w, vals, es, top)
    return run


def _xtn_size(w: int) -> int:
    """Narrow element bytes of the extract-narrow class: exactly one of bit 22, 20, 19 set."""
    tsz = (((w >> 22) & 1) << 2) | ((w >> 19) & 3)
    es = {1: 1, 2: 2, 4: 4}.get(tsz)
    if es is None:
        raise Sve2Undefined("saturating extract narrow with a reserved tsz")
    return es


def _xtn(signed: bool, kind: str, top: bool):
    def run(w: int, r: SveRegs) -> None:
        es = _xtn_size(w)
        bits = 8 * es
        lo, hi = _sat_range(kind, bits)
        src = unpack(r.z[zn(w)], 2 * es)
        vals = [_clamp(sext(x, 2 * bits) if signed else x, lo, hi) for x in src]
        _write_narrow(r, w, vals, es, top)
    return run


def _addhn(sub: bool, rounding: bool, top: bool):
    def run(w: int, r: SveRegs) -> None:
        s = size(w)
        if s == 0:
            raise Sve2Undefined("add/sub narrow high with size = 00")
        wide = 1 << s
        bits = 4 * wide                     # narrow element bits = half the wide ones
        a = unpack(r.z[zn(w)], wide)
        b = unpack(r.z[zm(w)], wide)
        rnd = (1 << (bits - 1)) if rounding else 0
        vals = [((x - y if sub else x + y) + rnd) >> bits for x, y in zip(a, b)]
        _write_narrow(r, w, vals, wide // 2, top)
    return run


def _shll(signed: bool, top: bool):
    def run(w: int, r: SveRegs) -> None:
        es, ti = _tsz3(w, "shift left long")
        bits = 8 * es
        sh = ti - bits
        src = unpack(r.z[zn(w)], es)[int(top)::2]
        r.set_z(zd(w), pack([(sext(x, bits) if signed else x) << sh for x in src], 2 * es))
    return run


INSNS: tuple[Sve2Insn, ...] = (
    # 01000101 0 tszh 1 tszl imm3 00 op U R T Zn Zd
    *(Sve2Insn(f"{name}{'bt'[t]}", 0xFFA0FC00, 0x45200000 | (code << 11) | (t << 10), "sve2",
               _shift_narrow(sg, kind, rnd, bool(t)))
      for name, code, sg, kind, rnd in SHIFT_NARROW for t in (0, 1)),
    # 01000101 0 tszh 1 tszl 000 010 opc T Zn Zd
    *(Sve2Insn(f"{name}{'bt'[t]}", 0xFFA7FC00, 0x45204000 | (opc << 11) | (t << 10), "sve2",
               _xtn(sg, kind, bool(t)))
      for name, opc, sg, kind in (("sqxtn", 0, True, "s"), ("uqxtn", 1, False, "u"),
                                  ("sqxtun", 2, True, "u"))
      for t in (0, 1)),
    # 01000101 size 1 Zm 011 S R T Zn Zd
    *(Sve2Insn(f"{name}{'bt'[t]}", 0xFF20FC00, 0x45206000 | (code << 11) | (t << 10), "sve2",
               _addhn(bool(code & 2), bool(code & 1), bool(t)))
      for name, code in (("addhn", 0), ("raddhn", 1), ("subhn", 2), ("rsubhn", 3))
      for t in (0, 1)),
    # 01000101 0 tszh 0 tszl imm3 1010 U T Zn Zd
    *(Sve2Insn(f"{name}{'bt'[t]}", 0xFFA0FC00, 0x4500A000 | (u << 11) | (t << 10), "sve2",
               _shll(not u, bool(t)))
      for name, u in (("sshll", 0), ("ushll", 1)) for t in (0, 1)),
)
