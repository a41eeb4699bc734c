"""SVE2 complex integer arithmetic, long add/subtract with carry and the interleaved long
add/subtract of the SVE2 unit (FEAT_SVE2).

A complex number is a pair of adjacent elements: real part in the even one, imaginary part in
the odd one.

* CADD, SQCADD: add the second operand rotated by 90 or 270 degrees (B/H/S/D; SQCADD saturates);
* CMLA, SQRDCMLAH: multiply-add with the second operand rotated by 0/90/180/270 degrees
  (vectors B/H/S/D, indexed H/S; SQRDCMLAH doubles, rounds into the top half and saturates);
* CDOT: complex dot product of four narrow elements into one wide accumulator (S from B,
  D from H; vectors and indexed);
* ADCLB, ADCLT, SBCLB, SBCLT: add/subtract long with carry (S/D) -- the carry in is bit 0 of
  each odd element of Zm, the carry out goes to the odd element of Zda;
* SADDLBT, SSUBLBT, SSUBLTB: long add/subtract of a bottom element with a top one (H/S/D).
"""
from __future__ import annotations

from .elems import pack, sext, size, unpack, widening_sizes, zd, zm, zn
from .state import Sve2Insn, Sve2Undefined, SveRegs


def _sat_s(v: int, bits: int) -> int:
    return max(-(1 << (bits - 1)), min((1 << (bits - 1)) - 1, v))


# ---- CADD / SQCADD ---------------------------------------------------------------------------
def _cadd(saturate: bool):
    def run(w: int, r: SveRegs) -> None:
        es = 1 << size(w)
        bits = 8 * es
        a = [sext(x, bits) for x in unpack(r.z[zd(w)], es)]
        b = [sext(x, bits) for x in unpack(r.z[zn(w)], es)]        # Zm is in bits 9:5
        rot270 = (w >> 10) & 1
        out = list(a)
        for k in range(0, len(a), 2):
            # rotating b by 90 degrees is (-b_i, b_r); by 270 it is (b_i, -b_r)
            if rot270:
                re, im = a[k] + b[k + 1], a[k + 1] - b[k]
            else:
                re, im = a[k] - b[k + 1], a[k + 1] + b[k]
            if saturate:
                re, im = _sat_s(re, bits), _sat_s(im, bits)
            out[k], out[k + 1] = re, im
        r.set_z(zd(w), pack(out, es))
    return run


# ---- CMLA / SQRDCMLAH --------------------------------------------------------------------------
def _rot_terms(rot: int) -> tuple[int, int, int]:
    """(which part of Zn multiplies -- and of Zm goes to the real result, the other part of Zm
    going to the imaginary one --, sign of the real term, sign of the imaginary term) for a
    rotation of rot*90 degrees: 0 and 180 use Zn's real part, 90 and 270 its imaginary part."""
    sel_a = rot & 1
    neg_r = (rot & 1) != (rot >> 1)
    neg_i = bool(rot >> 1)
    return sel_a, -1 if neg_r else 1, -1 if neg_i else 1


def _cmla_core(a: list[int], b_pairs: list[tuple[int, int]], acc: list[int], rot: int,
               bits: int, rounding_high: bool) -> list[int]:
    sel_a, s_r, s_i = _rot_terms(rot)
    out = []
    for k in range(0, len(a), 2):
        n = a[k + sel_a]
        m_r, m_i = b_pairs[k // 2]
        m_a, m_b = (m_r, m_i) if sel_a == 0 else (m_i, m_r)
        pr, pi = s_r * n * m_a, s_i * n * m_b
        if rounding_high:
            rnd = 1 << (bits - 1)
            out += [_sat_s(((acc[k] << bits) + 2 * pr + rnd) >> bits, bits),
                    _sat_s(((acc[k + 1] << bits) + 2 * pi + rnd) >> bits, bits)]
        else:
            out += [acc[k] + pr, acc[k + 1] + pi]
    return out


def _cmla_vectors(rounding_high: bool):
    def run(w: int, r: SveRegs) -> None:
        es = 1 << size(w)
        bits = 8 * es
        a = [sext(x, bits) for x in unpack(r.z[zn(w)], es)]
        m = [sext(x, bits) for x in unpack(r.z[zm(w)], es)]
        acc = [sext(x, bits) for x in unpack(r.z[zd(w)], es)]
        pairs = list(zip(m[0::2], m[1::2]))
        r.set_z(zd(w), pack(_cmla_core(a, pairs, acc, (w >> 10) & 3, bits, rounding_high), es))
    return run


def _complex_index(w: int) -> tuple[int, int, int]:
    """(element bytes, pair index, Zm) of the indexed complex classes: size 10 is H (index
    20:19, Z0-Z7), size 11 is S (index 20, Z0-Z15)."""
    if (w >> 22) & 1:
        return 4, (w >> 20) & 1, (w >> 16) & 15
    return 2, (w >> 19) & 3, (w >> 16) & 7


def _cmla_indexed(rounding_high: bool):
    def run(w: int, r: SveRegs) -> None:
        es, idx, mreg = _complex_index(w)
        bits = 8 * es
        a = [sext(x, bits) for x in unpack(r.z[zn(w)], es)]
        m = [sext(x, bits) for x in unpack(r.z[mreg], es)]
        acc = [sext(x, bits) for x in unpack(r.z[zd(w)], es)]
        per_seg = 16 // (2 * es)                      # pairs in a 128-bit segment
        npairs = len(a) // 2
        pairs = []
        for p in range(npairs):
            q = (p - p % per_seg) + idx
            pairs.append((m[2 * q], m[2 * q + 1]))
        r.set_z(zd(w), pack(_cmla_core(a, pairs, acc, (w >> 10) & 3, bits, rounding_high), es))
    return run


# ---- CDOT ----------------------------------------------------------------------------------------
def _cdot_terms(rot: int) -> tuple[int, int, int]:
    """(part of Zm paired with Zn's real part, part of Zm paired with Zn's imaginary part, sign
    of the imaginary-part product) for CDOT's rotation: 0 sums the real parts of n*m, 90 the
    imaginary parts of n*m, 180 the real parts of n*conj(m), 270 the imaginary parts of
    conj(n)*m."""
    return {0: (0, 1, -1), 1: (1, 0, 1), 2: (0, 1, 1), 3: (1, 0, -1)}[rot]


def _cdot_sizes(w: int) -> tuple[int, int]:
    s = size(w)
    if s == 2:
        return 4, 1
    if s == 3:
        return 8, 2
    raise Sve2Undefined("cdot with size 0x")


def _cdot(a: list[int], groups: list[list[int]], acc: list[int], rot: int) -> list[int]:
    sa, sb, sgn = _cdot_terms(rot)
    out = []
    for e, c in enumerate(acc):
        g = groups[e]
        for i in range(2):
            n_r, n_i = a[4 * e + 2 * i], a[4 * e + 2 * i + 1]
            c += n_r * g[2 * i + sa] + sgn * n_i * g[2 * i + sb]
        out.append(c)
    return out


def _cdot_vectors(w: int, r: SveRegs) -> None:
    des, es = _cdot_sizes(w)
    bits = 8 * es
    a = [sext(x, bits) for x in unpack(r.z[zn(w)], es)]
    m = [sext(x, bits) for x in unpack(r.z[zm(w)], es)]
    acc = unpack(r.z[zd(w)], des)
    groups = [m[4 * e:4 * e + 4] for e in range(len(acc))]
    r.set_z(zd(w), pack(_cdot(a, groups, acc, (w >> 10) & 3), des))


def _cdot_indexed(w: int, r: SveRegs) -> None:
    des, es = _cdot_sizes(w)
    bits = 8 * es
    if des == 4:
        idx, mreg = (w >> 19) & 3, (w >> 16) & 7
    else:
        idx, mreg = (w >> 20) & 1, (w >> 16) & 15
    a = [sext(x, bits) for x in unpack(r.z[zn(w)], es)]
    m = [sext(x, bits) for x in unpack(r.z[mreg], es)]
    acc = unpack(r.z[zd(w)], des)
    per_seg = 16 // des
    groups = []
    for e in range(len(acc)):
        q = (e - e % per_seg) + idx
        groups.append(m[4 * q:4 * q + 4])
    r.set_z(zd(w), pack(_cdot(a, groups, acc, (w >> 10) & 3), des))


# ---- ADCL / SBCL ---------------------------------------------------------------------------------
def _adcl(sub: bool, top: bool):
    def run(w: int, r: SveRegs) -> None:
        es = 8 if (w >> 22) & 1 else 4
        bits = 8 * es
        ones = (1 << bits) - 1
        a = unpack(r.z[zn(w)], es)
        m = unpack(r.z[zm(w)], es)
        d = unpack(r.z[zd(w)], es)
        for k in range(0, len(d), 2):
            x = a[k + int(top)]
            if sub:
                x ^= ones                    # subtract with borrow is add of the complement
            s = d[k] + x + (m[k + 1] & 1)
            d[k], d[k + 1] = s & ones, s >> bits
        r.set_z(zd(w), pack(d, es))
    return run


# ---- SADDLBT / SSUBLBT / SSUBLTB -----------------------------------------------------------------
def _interleaved_long(sel_n: int, sel_m: int, sub: bool):
    def run(w: int, r: SveRegs) -> None:
        des, es, bits = widening_sizes(w, "interleaved long add/sub")
        a = [sext(x, bits) for x in unpack(r.z[zn(w)], es)[sel_n::2]]
        b = [sext(x, bits) for x in unpack(r.z[zm(w)], es)[sel_m::2]]
        r.set_z(zd(w), pack([x - y if sub else x + y for x, y in zip(a, b)], des))
    return run


INSNS: tuple[Sve2Insn, ...] = (
    # 01000101 size 00000 op 11011 rot Zm Zdn
    Sve2Insn("cadd", 0xFF3FF800, 0x4500D800, "sve2", _cadd(False)),
    Sve2Insn("sqcadd", 0xFF3FF800, 0x4501D800, "sve2", _cadd(True)),
    # 01000100 size 0 Zm 0001/0010/0011 rot Zn Zda
    Sve2Insn("cdot", 0xFF20F000, 0x44001000, "sve2", _cdot_vectors),
    Sve2Insn("cmla", 0xFF20F000, 0x44002000, "sve2", _cmla_vectors(False)),
    Sve2Insn("sqrdcmlah", 0xFF20F000, 0x44003000, "sve2", _cmla_vectors(True)),
    # 01000100 1 size 1 ... 0100/0110/0111 rot Zn Zda (size 10 or 11)
    Sve2Insn("cdot.idx", 0xFFA0F000, 0x44A04000, "sve2", _cdot_indexed),
    Sve2Insn("cmla.idx", 0xFFA0F000, 0x44A06000, "sve2", _cmla_indexed(False)),
    Sve2Insn("sqrdcmlah.idx", 0xFFA0F000, 0x44A07000, "sve2", _cmla_indexed(True)),
    # 01000101 S sz 0 Zm 11010 T Zn Zda
    *(Sve2Insn(f"{name}{'bt'[t]}", 0xFFA0FC00, value | (t << 10), "sve2", _adcl(sub, bool(t)))
      for name, value, sub in (("adcl", 0x4500D000, False), ("sbcl", 0x4580D000, True))
      for t in (0, 1)),
    # 01000101 size 0 Zm 1000 S tb Zn Zd
    Sve2Insn("saddlbt", 0xFF20FC00, 0x45008000, "sve2", _interleaved_long(0, 1, False)),
    Sve2Insn("ssublbt", 0xFF20FC00, 0x45008800, "sve2", _interleaved_long(0, 1, True)),
    Sve2Insn("ssubltb", 0xFF20FC00, 0x45008C00, "sve2", _interleaved_long(1, 0, True)),
)
