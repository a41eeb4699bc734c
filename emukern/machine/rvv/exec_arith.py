"""Handlers for OP-V integer instructions: element-wise ops, compares, merges/moves, slides,
reductions, mask-register logic and the scalar<->vector moves.

Every handler follows the same shape: check vtype and register-group legality, return
early when vstart >= vl, read operands with struct, compute, write back only the body
elements vstart..vl-1 (tail untouched; masked-off elements keep their old value), vstart=0.
"""
from __future__ import annotations

from itertools import repeat
from collections.abc import Iterable
from typing import TYPE_CHECKING

from .insn import Insn
from .types import ExecResult, VectorMemory, XRegs

if TYPE_CHECKING:
    from .unit import RVVUnit

XMASK = (1 << 64) - 1


def _scalar(u: "RVVUnit", d: Insn, x: XRegs, sew: int, signed: bool) -> int:
    """The .vx/.vi operand truncated to SEW (and sign-interpreted when ``signed``)."""
    s = (x.read(d.rs1) if d.form == "vx" else d.imm) & ((1 << sew) - 1)
    if signed and s >> (sew - 1):
        s -= 1 << sew
    return s


def _overlaps(a: int, na: int, b: int, nb: int) -> bool:
    return a < b + nb and b < a + na


_LANE_TOP: dict[tuple[int, int], int] = {}


def _lane_top(sl: int, n: int) -> int:
    """Integer with the top bit of each of n lanes of 8<<sl bits set."""
    h = _LANE_TOP.get((sl, n))
    if h is None:
        eb = 1 << sl
        h = _LANE_TOP[(sl, n)] = int.from_bytes((bytes(eb - 1) + b"\x80") * n, "little")
    return h


def run_binop(u: "RVVUnit", d: Insn, x: XRegs, mem: VectorMemory) -> ExecResult:
    vt = u._vt
    if vt is None:
        raise u._vill_error(d)
    g = vt.group
    if g > 1 and (d.vd | d.vs2 | (d.vs1 if d.form == "vv" else 0)) & (g - 1):
        raise u._illegal(d, f"register group not aligned to LMUL={g}")
    if not d.vm and d.vd == 0:
        raise u._illegal(d, "masked destination overlaps v0")
    start, vl = u.vstart, u.vl
    if start < vl and d.vm and d.swar is not None:
        # fast path: all lanes at once on big integers
        sl = vt.sew_log2
        v, vlenb = u.v, u.vlenb
        lo, n = start << sl, (vl - start) << sl
        o2 = d.vs2 * vlenb + lo
        a = int.from_bytes(v[o2:o2 + n], "little")
        if d.form == "vv":
            o1 = d.vs1 * vlenb + lo
            b = int.from_bytes(v[o1:o1 + n], "little")
        else:
            eb = 1 << sl
            s = (x.read(d.rs1) if d.form == "vx" else d.imm) & ((1 << (eb * 8)) - 1)
            b = int.from_bytes(s.to_bytes(eb, "little") * (vl - start), "little")
        r = d.swar(a, b, _lane_top(sl, vl - start), (1 << (n * 8)) - 1)
        od = d.vd * vlenb + lo
        v[od:od + n] = r.to_bytes(n, "little")
    elif start < vl:
        n = vl - start
        sl = vt.sew_log2
        sew = vt.sew
        va = u._read(d.vs2, sl, start, n, d.a_signed)
        vb: Iterable[int]
        if d.form == "vv":
            vb = u._read(d.vs1, sl, start, n, d.b_signed)
        else:
            vb = repeat(_scalar(u, d, x, sew, d.b_signed), n)
        vr = d.fn(va, vb, sew)
        if not d.vm:
            old = u._read(d.vd, sl, start, n)
            vr = [p if c == "1" else o for p, o, c in zip(vr, old, u._mask_str(start, n))]
        u._write(d.vd, sl, start, vr)
    u.vstart = 0
    return u._result(d.kind, vt.lmul_log2, True)


def run_cmp(u: "RVVUnit", d: Insn, x: XRegs, mem: VectorMemory) -> ExecResult:
    vt = u._need_vtype(d)
    g = vt.group
    srcs = (d.vs2, d.vs1) if d.form == "vv" else (d.vs2,)
    if g > 1:
        for s in srcs:
            if s & (g - 1):
                raise u._illegal(d, f"register group not aligned to LMUL={g}")
            # a mask destination may only overlap the lowest register of a source group
            if d.vd != s and _overlaps(d.vd, 1, s, g):
                raise u._illegal(d, "mask destination overlaps a source group")
    start, vl = u.vstart, u.vl
    if start < vl:
        n = vl - start
        sl, sew = vt.sew_log2, vt.sew
        a = u._read(d.vs2, sl, start, n, d.a_signed)
        b: Iterable[int]
        if d.form == "vv":
            b = u._read(d.vs1, sl, start, n, d.a_signed)
        else:
            b = repeat(_scalar(u, d, x, sew, d.a_signed), n)
        r = d.fn(a, b)
        bits = 0
        for k, t in enumerate(r):
            if t:
                bits |= 1 << k
        wmask = (1 << n) - 1
        if not d.vm:
            wmask &= u._reg_int(0) >> start
        wmask <<= start
        old = u._reg_int(d.vd)
        u._set_reg_int(d.vd, (old & ~wmask) | ((bits << start) & wmask))
    u.vstart = 0
    return u._result("arith", vt.lmul_log2, True)


def run_merge(u: "RVVUnit", d: Insn, x: XRegs, mem: VectorMemory) -> ExecResult:
    """vmerge.v[vxi]m (vm=0) and vmv.v.[vxi] (vm=1)."""
    vt = u._need_vtype(d)
    g = vt.group
    if d.vm and d.vs2 != 0:
        raise u._illegal(d, "vs2 field must be v0")
    if g > 1 and (d.vd | (d.vs2 if not d.vm else 0) | (d.vs1 if d.form == "vv" else 0)) & (g - 1):
        raise u._illegal(d, f"register group not aligned to LMUL={g}")
    if not d.vm and d.vd == 0:
        raise u._illegal(d, "destination overlaps the mask register v0")
    start, vl = u.vstart, u.vl
    if start < vl:
        n = vl - start
        sl = vt.sew_log2
        b: list[int] | tuple[int, ...]
        if d.form == "vv":
            b = u._read(d.vs1, sl, start, n)
        else:
            b = [_scalar(u, d, x, vt.sew, False)] * n
        if not d.vm:
            a = u._read(d.vs2, sl, start, n)
            b = [q if c == "1" else p for p, q, c in zip(a, b, u._mask_str(start, n))]
        u._write(d.vd, sl, start, b)
    u.vstart = 0
    return u._result("arith", vt.lmul_log2, True)


def run_slide(u: "RVVUnit", d: Insn, x: XRegs, mem: VectorMemory) -> ExecResult:
    """vslideup/vslidedown .vx/.vi and vslide1up/vslide1down .vx (d.imm: +1/-1 = slide1)."""
    vt = u._need_vtype(d)
    g = vt.group
    if g > 1 and (d.vd | d.vs2) & (g - 1):
        raise u._illegal(d, f"register group not aligned to LMUL={g}")
    if not d.vm and d.vd == 0:
        raise u._illegal(d, "masked destination overlaps v0")
    up = d.name.startswith(("vslideup", "vslide1up"))
    if up and _overlaps(d.vd, g, d.vs2, g):
        raise u._illegal(d, "destination overlaps the source group")
    one = d.name.startswith("vslide1")
    start, vl = u.vstart, u.vl
    sl, sew, vlmax = vt.sew_log2, vt.sew, vt.vlmax
    if start < vl:
        if one:
            off = 1
            s = x.read(d.rs1) & ((1 << sew) - 1)
        else:
            off = x.read(d.rs1) if d.form == "vx" else d.imm
        if up:
            lo = max(start, off) if off < vl else vl   # elements below OFFSET are untouched
            new: list[int] = []
            if lo < vl:
                new = list(u._read(d.vs2, sl, lo - off, vl - lo))
            if one and start == 0:
                lo = 0
                new.insert(0, s)
        else:
            lo = start
            if off >= vlmax:
                new = [0] * (vl - lo)
            else:
                end = min(vl + off, vlmax)                 # source elements past VLMAX read 0
                cnt = max(0, end - lo - off)
                new = list(u._read(d.vs2, sl, lo + off, cnt)) if cnt else []
                new += [0] * (vl - lo - len(new))
            if one:
                # slide1down: vd[vl-1] = x[rs1]; everything else comes from vs2[i+1] < vl
                new[-1] = s
        if new:
            n = len(new)
            if not d.vm:
                old = u._read(d.vd, sl, lo, n)
                new = [p if c == "1" else o for p, o, c in zip(new, old, u._mask_str(lo, n))]
            u._write(d.vd, sl, lo, new)
    u.vstart = 0
    return u._result("permute", vt.lmul_log2, True)


def run_vid(u: "RVVUnit", d: Insn, x: XRegs, mem: VectorMemory) -> ExecResult:
    vt = u._need_vtype(d)
    g = vt.group
    if d.vs2 != 0:
        raise u._illegal(d, "vs2 field must be v0")
    if g > 1 and d.vd & (g - 1):
        raise u._illegal(d, f"register group not aligned to LMUL={g}")
    if not d.vm and d.vd == 0:
        raise u._illegal(d, "masked destination overlaps v0")
    start, vl = u.vstart, u.vl
    if start < vl:
        n = vl - start
        m = (1 << vt.sew) - 1
        new = [i & m for i in range(start, vl)]
        if not d.vm:
            old = u._read(d.vd, vt.sew_log2, start, n)
            new = [p if c == "1" else o for p, o, c in zip(new, old, u._mask_str(start, n))]
        u._write(d.vd, vt.sew_log2, start, new)
    u.vstart = 0
    return u._result("arith", vt.lmul_log2, True)


def run_reduce(u: "RVVUnit", d: Insn, x: XRegs, mem: VectorMemory) -> ExecResult:
    vt = u._need_vtype(d)
    g = vt.group
    if g > 1 and d.vs2 & (g - 1):
        raise u._illegal(d, f"register group not aligned to LMUL={g}")
    if u.vstart:
        raise u._illegal(d, "reductions require vstart = 0")
    vl = u.vl
    if vl:
        sl, sew = vt.sew_log2, vt.sew
        a: list[int] | tuple[int, ...] = u._read(d.vs2, sl, 0, vl, d.a_signed)
        if not d.vm:
            a = [p for p, c in zip(a, u._mask_str(0, vl)) if c == "1"]
        init = u._read(d.vs1, sl, 0, 1, d.a_signed)[0]
        u._write(d.vd, sl, 0, (d.fn(list(a), init, sew),))
    return u._result("reduce", vt.lmul_log2, True)


def run_masklogic(u: "RVVUnit", d: Insn, x: XRegs, mem: VectorMemory) -> ExecResult:
    u._need_vtype(d)
    if not d.vm:
        raise u._illegal(d, "mask-register logical instructions must be unmasked (vm=1)")
    start, vl = u.vstart, u.vl
    if start < vl:
        wmask = ((1 << vl) - 1) ^ ((1 << start) - 1)
        r = d.fn(u._reg_int(d.vs2), u._reg_int(d.vs1))
        old = u._reg_int(d.vd)
        u._set_reg_int(d.vd, (old & ~wmask) | (r & wmask))
    u.vstart = 0
    return u._result("mask", 0, True)


def run_cpop_first(u: "RVVUnit", d: Insn, x: XRegs, mem: VectorMemory) -> ExecResult:
    u._need_vtype(d)
    if u.vstart:
        raise u._illegal(d, "requires vstart = 0")
    vl = u.vl
    m = u._reg_int(d.vs2) & ((1 << vl) - 1)
    if not d.vm:
        m &= u._reg_int(0)
    if d.name == "vcpop.m":
        r = m.bit_count()
    else:
        r = (m & -m).bit_length() - 1 if m else XMASK   # -1 when no bit is set
    if d.rd:
        x.write(d.rd, r)
    return u._result("mask", 0, False)


def run_mv_x_s(u: "RVVUnit", d: Insn, x: XRegs, mem: VectorMemory) -> ExecResult:
    vt = u._need_vtype(d)
    if not d.vm:
        raise u._illegal(d, "vm=0 is reserved")
    # performed even when vstart >= vl or vl = 0; sign-extends the element to XLEN
    val = u._read(d.vs2, vt.sew_log2, 0, 1, True)[0] & XMASK
    if d.rd:
        x.write(d.rd, val)
    dirty = u.vstart != 0
    u.vstart = 0
    return u._result("move", 0, dirty)


def run_mv_s_x(u: "RVVUnit", d: Insn, x: XRegs, mem: VectorMemory) -> ExecResult:
    vt = u._need_vtype(d)
    if not d.vm:
        raise u._illegal(d, "vm=0 is reserved")
    if d.vs2 != 0:
        raise u._illegal(d, "vs2 field must be v0")
    if u.vstart < u.vl:
        u._write(d.vd, vt.sew_log2, 0, (x.read(d.rs1) & ((1 << vt.sew) - 1),))
    u.vstart = 0
    return u._result("move", 0, True)


def run_mvnr(u: "RVVUnit", d: Insn, x: XRegs, mem: VectorMemory) -> ExecResult:
    """vmv<nr>r.v: copy nr whole registers; element size is SEW (EEW=8 when vill)."""
    nr = d.nregs
    if not d.vm:
        raise u._illegal(d, "vm=0 is reserved")
    if (d.vd | d.vs2) & (nr - 1):
        raise u._illegal(d, f"registers must be aligned to {nr}")
    vt = u._vt
    sl = vt.sew_log2 if vt is not None else 0
    evl = (nr * u.vlenb) >> sl
    start = u.vstart
    if start < evl:
        b = u.vlenb
        lo, hi = (start << sl), nr * b
        u.v[d.vd * b + lo:d.vd * b + hi] = u.v[d.vs2 * b + lo:d.vs2 * b + hi]
    u.vstart = 0
    return u._result("arith", nr.bit_length() - 1, True)
