"""Handlers for the OP-V integer instructions whose operands differ in width from SEW or that
read more than two sources: widening and narrowing arithmetic, the fixed-point group
(saturating, averaging, rounding shifts, clips), multiply-accumulate, add-with-carry,
sign/zero extension, gathers, compress and the mask-building unary operations.

They share one element-wise driver, :func:`run_elem`: each instruction is described by the
EEW of its destination and sources relative to SEW (``Insn.spec``) and a list-level function
that maps source elements (and, for accumulating forms, the old destination elements) to the
new destination elements.  The driver does the legality checks the spec makes for every such
instruction (vill, EEW <= ELEN, EMUL in 1/8..8, group alignment, the overlap rules between a
destination and a source of another EEW, v0 as a masked destination), writes only body
elements vstart..vl-1 and keeps masked-off and tail elements, like the rest of the unit.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .insn import Insn
from .types import ExecResult, VectorMemory, XRegs

if TYPE_CHECKING:
    from .unit import RVVUnit
    from .vtype import VType

# fn(vs2 elements, vs1/scalar elements, old destination elements or None, SEW, vxrm)
#   -> (destination elements as unsigned integers of the destination EEW, saturated?)
ElemFn = Callable[[list[int], list[int], "list[int] | None", int, int], tuple[list[int], bool]]


@dataclass(frozen=True, slots=True)
class Spec:
    """Widths of an element-wise instruction, as log2 of (EEW / SEW) per operand."""

    fn: ElemFn
    d: int = 0            # destination
    s2: int = 0           # vs2
    s1: int = 0           # vs1 (the .vv form; scalars are always SEW wide)
    sign2: bool = False   # read vs2 elements as signed
    sign1: bool = False   # read vs1 / the scalar as signed
    acc: bool = False     # the old destination value is an input (multiply-add forms)
    kind: str = "arith"   # cost class
    has_s1: bool = True   # False for unary forms (vsext/vzext): the vs1 field is an opcode


def _overlaps(a: int, na: int, b: int, nb: int) -> bool:
    return a < b + nb and b < a + na


def emul_check(u: "RVVUnit", d: Insn, vt: "VType", rel: int, reg: int) -> int:
    """Check an operand of EEW = SEW * 2**rel in register ``reg``: EEW within 8..ELEN, EMUL in
    1/8..8 and the register aligned to its group.  Returns log2(EMUL)."""
    sl = vt.sew_log2 + rel
    if not 0 <= sl <= 3:
        raise u._illegal(d, f"EEW={8 << sl if sl >= 0 else 'below 8'} is not supported (ELEN=64)")
    e = vt.lmul_log2 + rel
    if not -3 <= e <= 3:
        raise u._illegal(d, f"EMUL=2^{e} is out of range")
    g = 1 << max(e, 0)
    if reg & (g - 1):
        raise u._illegal(d, f"register v{reg} not aligned to EMUL={g}")
    return e


def overlap_check(u: "RVVUnit", d: Insn, dst: int, de: int, src: int, se: int, deew: int,
                  seew: int) -> None:
    """The spec's rule for a destination group overlapping a source group of another EEW: a
    wider destination may overlap only with its highest part and only a source of EMUL >= 1;
    a narrower destination only the lowest part of the source."""
    gd, gs = 1 << max(de, 0), 1 << max(se, 0)
    if not _overlaps(dst, gd, src, gs) or deew == seew:
        return
    if deew > seew and se >= 0 and src == dst + gd - gs:
        return
    if deew < seew and dst == src:
        return
    raise u._illegal(d, f"destination v{dst} overlaps source v{src} of another EEW")


def _scalar(x: XRegs, d: Insn, sew: int, signed: bool) -> int:
    s = (x.read(d.rs1) if d.form == "vx" else d.imm) & ((1 << sew) - 1)
    if signed and s >> (sew - 1):
        s -= 1 << sew
    return s


def run_elem(u: "RVVUnit", d: Insn, x: XRegs, mem: VectorMemory) -> ExecResult:
    sp: Spec = d.spec
    vt = u._need_vtype(d)
    sl = vt.sew_log2
    de = emul_check(u, d, vt, sp.d, d.vd)
    e2 = emul_check(u, d, vt, sp.s2, d.vs2)
    overlap_check(u, d, d.vd, de, d.vs2, e2, sp.d, sp.s2)
    vv = sp.has_s1 and d.form == "vv"
    if vv:
        e1 = emul_check(u, d, vt, sp.s1, d.vs1)
        overlap_check(u, d, d.vd, de, d.vs1, e1, sp.d, sp.s1)
    if not d.vm and d.vd == 0:
        raise u._illegal(d, "masked destination overlaps v0")
    start, vl = u.vstart, u.vl
    if start < vl:
        n = vl - start
        sew = vt.sew
        a = list(u._read(d.vs2, sl + sp.s2, start, n, sp.sign2))
        if vv:
            b = list(u._read(d.vs1, sl + sp.s1, start, n, sp.sign1))
        elif sp.has_s1:
            b = [_scalar(x, d, sew, sp.sign1)] * n
        else:
            b = a
        dl = sl + sp.d
        old = list(u._read(d.vd, dl, start, n)) if sp.acc or not d.vm else None
        if d.vm:
            r, sat = sp.fn(a, b, old, sew, u.vxrm)
        else:
            # only active elements are computed: a masked-off one must not set vxsat
            assert old is not None
            act = [k for k, c in enumerate(u._mask_str(start, n)) if c == "1"]
            ra, sat = sp.fn([a[k] for k in act], [b[k] for k in act],
                            [old[k] for k in act], sew, u.vxrm)
            r = old
            for k, val in zip(act, ra):
                r[k] = val
        u._write(d.vd, dl, start, r)
        if sat:
            u.vxsat = 1
    u.vstart = 0
    return u._result(sp.kind, max(de, e2), True)


# ---- element functions ---------------------------------------------------------------------

def _m(bits: int) -> int:
    return (1 << bits) - 1


def _wrap(f: Callable[[int, int], int], dbits: Callable[[int], int]) -> ElemFn:
    """A plain element function (no old value, no saturation) writing dbits(SEW) bits."""
    def run(a: list[int], b: list[int], old: list[int] | None, sew: int, rm: int
            ) -> tuple[list[int], bool]:
        m = _m(dbits(sew))
        return [f(p, q) & m for p, q in zip(a, b)], False
    return run


def _same(sew: int) -> int:
    return sew


def _double(sew: int) -> int:
    return 2 * sew


def _half(sew: int) -> int:       # narrowing: SEW is the destination width already
    return sew


def _acc(f: Callable[[int, int, int], int], dbits: Callable[[int], int]) -> ElemFn:
    """An element function of (vs2, vs1, old vd)."""
    def run(a: list[int], b: list[int], old: list[int] | None, sew: int, rm: int
            ) -> tuple[list[int], bool]:
        assert old is not None
        m = _m(dbits(sew))
        return [f(p, q, o) & m for p, q, o in zip(a, b, old)], False
    return run


def _sx(v: int, bits: int) -> int:
    """v (unsigned, ``bits`` wide) as a signed number."""
    return v - (1 << bits) if v >> (bits - 1) else v


def _round_incr(v: int, sh: int, rm: int) -> int:
    """The rounding increment vxrm adds when v is shifted right by sh bits."""
    if sh == 0:
        return 0
    half = (v >> (sh - 1)) & 1
    if rm == 0:                                   # rnu: round to nearest, ties up
        return half
    if rm == 1:                                   # rne: ties to even
        rest = v & _m(sh - 1)
        return half & int(bool(rest) or bool((v >> sh) & 1))
    if rm == 2:                                   # rdn: truncate
        return 0
    return int(not (v >> sh) & 1 and bool(v & _m(sh)))   # rod: jam into the low bit


def _roundoff(v: int, sh: int, rm: int) -> int:
    return (v >> sh) + _round_incr(v, sh, rm)


def _clamp(v: int, lo: int, hi: int) -> tuple[int, bool]:
    if v < lo:
        return lo, True
    if v > hi:
        return hi, True
    return v, False


def _sat_fn(f: Callable[[int, int, int, int], int], signed: bool, narrow: bool = False
            ) -> ElemFn:
    """A fixed-point function: f(a, b, sew, vxrm) gives the exact result, which is clamped to
    the SEW-bit (unsigned or signed) range; any clamping sets vxsat."""
    def run(a: list[int], b: list[int], old: list[int] | None, sew: int, rm: int
            ) -> tuple[list[int], bool]:
        lo, hi = (-(1 << (sew - 1)), _m(sew - 1)) if signed else (0, _m(sew))
        m = _m(sew)
        out: list[int] = []
        sat = False
        for p, q in zip(a, b):
            r, s = _clamp(f(p, q, sew, rm), lo, hi)
            sat |= s
            out.append(r & m)
        return out, sat
    return run


def _avg(f: Callable[[int, int], int]) -> ElemFn:
    """vaadd & co.: the exact sum/difference shifted right by one with vxrm rounding."""
    def run(a: list[int], b: list[int], old: list[int] | None, sew: int, rm: int
            ) -> tuple[list[int], bool]:
        m = _m(sew)
        return [_roundoff(f(p, q), 1, rm) & m for p, q in zip(a, b)], False
    return run


def _scaled_shift(a: list[int], b: list[int], old: list[int] | None, sew: int, rm: int
                  ) -> tuple[list[int], bool]:
    m = _m(sew)
    return [_roundoff(p, q & (sew - 1), rm) & m for p, q in zip(a, b)], False


def _narrow_shift(a: list[int], b: list[int], old: list[int] | None, sew: int, rm: int
                  ) -> tuple[list[int], bool]:
    m = _m(sew)
    s = 2 * sew - 1
    return [(p >> (q & s)) & m for p, q in zip(a, b)], False


def _clip(signed: bool) -> ElemFn:
    def f(p: int, q: int, sew: int, rm: int) -> int:
        return _roundoff(p, q & (2 * sew - 1), rm)
    return _sat_fn(f, signed)


def _smul(p: int, q: int, sew: int, rm: int) -> int:
    return _roundoff(p * q, sew - 1, rm)


def _ext(a: list[int], b: list[int], old: list[int] | None, sew: int, rm: int
         ) -> tuple[list[int], bool]:
    m = _m(sew)
    return [p & m for p in a], False


# funct6 -> (name, forms, Spec) for OPIVV/OPIVX/OPIVI
OPI_EXT: dict[int, tuple[str, str, Spec]] = {
    0x20: ("vsaddu", "VXI", Spec(_sat_fn(lambda p, q, s, r: p + q, False))),
    0x21: ("vsadd", "VXI", Spec(_sat_fn(lambda p, q, s, r: p + q, True), sign2=True, sign1=True)),
    0x22: ("vssubu", "VX", Spec(_sat_fn(lambda p, q, s, r: p - q, False))),
    0x23: ("vssub", "VX", Spec(_sat_fn(lambda p, q, s, r: p - q, True), sign2=True, sign1=True)),
    0x27: ("vsmul", "VX", Spec(_sat_fn(_smul, True), sign2=True, sign1=True, kind="mul")),
    0x2A: ("vssrl", "VXI", Spec(_scaled_shift)),
    0x2B: ("vssra", "VXI", Spec(_scaled_shift, sign2=True)),
    0x2C: ("vnsrl", "VXI", Spec(_narrow_shift, s2=1)),
    0x2D: ("vnsra", "VXI", Spec(_narrow_shift, s2=1, sign2=True)),
    0x2E: ("vnclipu", "VXI", Spec(_clip(False), s2=1)),
    0x2F: ("vnclip", "VXI", Spec(_clip(True), s2=1, sign2=True)),
}
UIMM_EXT = {"vssrl", "vssra", "vnsrl", "vnsra", "vnclipu", "vnclip"}

# funct6 -> (name, forms, Spec, suffix for V, suffix for X) for OPMVV/OPMVX
_add = lambda p, q: p + q        # noqa: E731 - one-line element bodies read best as lambdas
_sub = lambda p, q: p - q        # noqa: E731
_mul = lambda p, q: p * q        # noqa: E731
OPM_EXT: dict[int, tuple[str, str, Spec, str, str]] = {
    0x08: ("vaaddu", "VX", Spec(_avg(_add)), "vv", "vx"),
    0x09: ("vaadd", "VX", Spec(_avg(_add), sign2=True, sign1=True), "vv", "vx"),
    0x0A: ("vasubu", "VX", Spec(_avg(_sub)), "vv", "vx"),
    0x0B: ("vasub", "VX", Spec(_avg(_sub), sign2=True, sign1=True), "vv", "vx"),
    0x29: ("vmadd", "VX", Spec(_acc(lambda p, q, o: q * o + p, _same), acc=True, kind="mul"),
           "vv", "vx"),
    0x2B: ("vnmsub", "VX", Spec(_acc(lambda p, q, o: p - q * o, _same), acc=True, kind="mul"),
           "vv", "vx"),
    0x2D: ("vmacc", "VX", Spec(_acc(lambda p, q, o: p * q + o, _same), acc=True, kind="mul"),
           "vv", "vx"),
    0x2F: ("vnmsac", "VX", Spec(_acc(lambda p, q, o: o - p * q, _same), acc=True, kind="mul"),
           "vv", "vx"),
    0x30: ("vwaddu", "VX", Spec(_wrap(_add, _double), d=1), "vv", "vx"),
    0x31: ("vwadd", "VX", Spec(_wrap(_add, _double), d=1, sign2=True, sign1=True), "vv", "vx"),
    0x32: ("vwsubu", "VX", Spec(_wrap(_sub, _double), d=1), "vv", "vx"),
    0x33: ("vwsub", "VX", Spec(_wrap(_sub, _double), d=1, sign2=True, sign1=True), "vv", "vx"),
    0x34: ("vwaddu", "VX", Spec(_wrap(_add, _double), d=1, s2=1), "wv", "wx"),
    0x35: ("vwadd", "VX", Spec(_wrap(_add, _double), d=1, s2=1, sign2=True, sign1=True),
           "wv", "wx"),
    0x36: ("vwsubu", "VX", Spec(_wrap(_sub, _double), d=1, s2=1), "wv", "wx"),
    0x37: ("vwsub", "VX", Spec(_wrap(_sub, _double), d=1, s2=1, sign2=True, sign1=True),
           "wv", "wx"),
    0x38: ("vwmulu", "VX", Spec(_wrap(_mul, _double), d=1, kind="mul"), "vv", "vx"),
    0x3A: ("vwmulsu", "VX", Spec(_wrap(_mul, _double), d=1, sign2=True, kind="mul"),
           "vv", "vx"),
    0x3B: ("vwmul", "VX", Spec(_wrap(_mul, _double), d=1, sign2=True, sign1=True, kind="mul"),
           "vv", "vx"),
    0x3C: ("vwmaccu", "VX", Spec(_acc(lambda p, q, o: p * q + o, _double), d=1, acc=True,
                                 kind="mul"), "vv", "vx"),
    0x3D: ("vwmacc", "VX", Spec(_acc(lambda p, q, o: p * q + o, _double), d=1, acc=True,
                                sign2=True, sign1=True, kind="mul"), "vv", "vx"),
    0x3E: ("vwmaccus", "X", Spec(_acc(lambda p, q, o: p * q + o, _double), d=1, acc=True,
                                 sign2=True, kind="mul"), "vv", "vx"),
    0x3F: ("vwmaccsu", "VX", Spec(_acc(lambda p, q, o: p * q + o, _double), d=1, acc=True,
                                  sign1=True, kind="mul"), "vv", "vx"),
}

# VXUNARY0 vs1 -> (name, Spec)
VXUNARY0: dict[int, tuple[str, Spec]] = {
    2: ("vzext.vf8", Spec(_ext, s2=-3, has_s1=False)),
    3: ("vsext.vf8", Spec(_ext, s2=-3, sign2=True, has_s1=False)),
    4: ("vzext.vf4", Spec(_ext, s2=-2, has_s1=False)),
    5: ("vsext.vf4", Spec(_ext, s2=-2, sign2=True, has_s1=False)),
    6: ("vzext.vf2", Spec(_ext, s2=-1, has_s1=False)),
    7: ("vsext.vf2", Spec(_ext, s2=-1, sign2=True, has_s1=False)),
}


# ---- add/subtract with carry -----------------------------------------------------------------

def run_carry(u: "RVVUnit", d: Insn, x: XRegs, mem: VectorMemory) -> ExecResult:
    """vadc/vsbc (vd = vs2 +/- op1 +/- v0 carry) and vmadc/vmsbc (the carry/borrow out as a
    mask; vm=1 means no carry in).  ``d.imm`` is the sign of op1 (+1 add, -1 subtract);
    ``d.kind == "mask"`` for the carry-out forms."""
    vt = u._need_vtype(d)
    g = vt.group
    sub = d.name.startswith(("vsbc", "vmsbc"))
    to_mask = d.name.startswith("vm")
    regs = (d.vs2, d.vs1) if d.form == "vv" else (d.vs2,)
    for r in regs:
        if r & (g - 1):
            raise u._illegal(d, f"register group not aligned to LMUL={g}")
        if to_mask and d.vd != r and _overlaps(d.vd, 1, r, g):
            raise u._illegal(d, "mask destination overlaps a source group")
    if not to_mask:
        if d.vm:
            raise u._illegal(d, "vm=1 is reserved")
        if d.vd & (g - 1):
            raise u._illegal(d, f"register group not aligned to LMUL={g}")
        if d.vd == 0:
            raise u._illegal(d, "destination overlaps the carry register v0")
    start, vl = u.vstart, u.vl
    if start < vl:
        n = vl - start
        sl, sew = vt.sew_log2, vt.sew
        m = _m(sew)
        a = u._read(d.vs2, sl, start, n)
        b = list(u._read(d.vs1, sl, start, n)) if d.form == "vv" else \
            [_scalar(x, d, sew, False)] * n
        cin = [0] * n if d.vm else [int(c) for c in u._mask_str(start, n)]
        if sub:
            full = [p - q - c for p, q, c in zip(a, b, cin)]
        else:
            full = [p + q + c for p, q, c in zip(a, b, cin)]
        if to_mask:
            bits = 0
            for k, f in enumerate(full):
                if f < 0 or f > m:
                    bits |= 1 << k
            wmask = ((1 << n) - 1) << start
            old = u._reg_int(d.vd)
            u._set_reg_int(d.vd, (old & ~wmask) | ((bits << start) & wmask))
        else:
            u._write(d.vd, sl, start, [f & m for f in full])
    u.vstart = 0
    return u._result("arith", vt.lmul_log2, True)


# ---- permutations ----------------------------------------------------------------------------

def run_gather(u: "RVVUnit", d: Insn, x: XRegs, mem: VectorMemory) -> ExecResult:
    """vrgather.vv/.vx/.vi and vrgatherei16.vv: vd[i] = vs2[index] (0 past VLMAX)."""
    vt = u._need_vtype(d)
    sl = vt.sew_log2
    de = emul_check(u, d, vt, 0, d.vd)
    emul_check(u, d, vt, 0, d.vs2)
    g = 1 << max(de, 0)
    if _overlaps(d.vd, g, d.vs2, g):
        raise u._illegal(d, "destination overlaps the source group")
    ei16 = d.name.startswith("vrgatherei16")
    if d.form == "vv":
        rel = 1 - sl if ei16 else 0           # index EEW 16 -> log2(16/SEW)
        e1 = emul_check(u, d, vt, rel, d.vs1)
        if _overlaps(d.vd, g, d.vs1, 1 << max(e1, 0)):
            raise u._illegal(d, "destination overlaps the index group")
    if not d.vm and d.vd == 0:
        raise u._illegal(d, "masked destination overlaps v0")
    start, vl = u.vstart, u.vl
    if start < vl:
        n = vl - start
        vlmax = vt.vlmax
        src = u._read(d.vs2, sl, 0, vlmax)
        if d.form == "vv":
            idx = u._read(d.vs1, 1 if ei16 else sl, start, n)
        else:
            i = x.read(d.rs1) if d.form == "vx" else d.imm
            idx = (i,) * n
        r = [src[i] if i < vlmax else 0 for i in idx]
        if not d.vm:
            old = u._read(d.vd, sl, start, n)
            r = [p if c == "1" else o for p, o, c in zip(r, old, u._mask_str(start, n))]
        u._write(d.vd, sl, start, r)
    u.vstart = 0
    return u._result("permute", vt.lmul_log2, True)


def run_compress(u: "RVVUnit", d: Insn, x: XRegs, mem: VectorMemory) -> ExecResult:
    """vcompress.vm: the vs2 elements whose vs1 mask bit is set, packed from vd[0] up."""
    vt = u._need_vtype(d)
    g = vt.group
    if (d.vd | d.vs2) & (g - 1):
        raise u._illegal(d, f"register group not aligned to LMUL={g}")
    if _overlaps(d.vd, g, d.vs2, g) or _overlaps(d.vd, g, d.vs1, 1):
        raise u._illegal(d, "destination overlaps a source")
    if u.vstart:
        raise u._illegal(d, "requires vstart = 0")
    vl = u.vl
    if vl:
        sel = u._reg_int(d.vs1)
        src = u._read(d.vs2, vt.sew_log2, 0, vl)
        r = [e for i, e in enumerate(src) if (sel >> i) & 1]
        if r:
            u._write(d.vd, vt.sew_log2, 0, r)
    return u._result("permute", vt.lmul_log2, True)


# ---- mask-building unary operations ------------------------------------------------------------

def run_mask_unary(u: "RVVUnit", d: Insn, x: XRegs, mem: VectorMemory) -> ExecResult:
    """vmsbf.m / vmsif.m / vmsof.m (a mask from the first set bit) and viota.m (running count of
    set bits before each element)."""
    vt = u._need_vtype(d)
    if u.vstart:
        raise u._illegal(d, "requires vstart = 0")
    if not d.vm and d.vd == 0:
        raise u._illegal(d, "masked destination overlaps v0")
    vl = u.vl
    iota = d.name == "viota.m"
    if iota:
        de = emul_check(u, d, vt, 0, d.vd)
        if _overlaps(d.vd, 1 << max(de, 0), d.vs2, 1):
            raise u._illegal(d, "destination overlaps the source mask")
    elif d.vd == d.vs2:
        raise u._illegal(d, "destination overlaps the source mask")
    if not vl:
        return u._result("mask", 0, True)
    active = (1 << vl) - 1
    if not d.vm:
        active &= u._reg_int(0)
    src = u._reg_int(d.vs2) & active
    if iota:
        sl = vt.sew_log2
        old = u._read(d.vd, sl, 0, vl)
        m = _m(vt.sew)
        r: list[int] = []
        cnt = 0
        for i in range(vl):
            if (active >> i) & 1:
                r.append(cnt & m)
                cnt += (src >> i) & 1
            else:
                r.append(old[i])
        u._write(d.vd, sl, 0, r)
        return u._result("permute", vt.lmul_log2, True)
    first = (src & -src).bit_length() - 1 if src else vl
    before = (1 << first) - 1                       # bits below the first set one
    if d.name == "vmsbf.m":
        bits = before
    elif d.name == "vmsif.m":
        bits = (before << 1) | 1
    else:
        bits = (1 << first) if src else 0
    prev = u._reg_int(d.vd)
    u._set_reg_int(d.vd, (prev & ~active) | (bits & active))
    return u._result("mask", 0, True)


# ---- widening reductions ---------------------------------------------------------------------

def run_wreduce(u: "RVVUnit", d: Insn, x: XRegs, mem: VectorMemory) -> ExecResult:
    """vwredsumu.vs / vwredsum.vs: vd[0] (2*SEW) = vs1[0] (2*SEW) + sum of extended vs2."""
    vt = u._need_vtype(d)
    if vt.sew >= 64:
        raise u._illegal(d, "2*SEW exceeds ELEN")
    emul_check(u, d, vt, 0, d.vs2)
    if u.vstart:
        raise u._illegal(d, "reductions require vstart = 0")
    vl = u.vl
    if vl:
        sl = vt.sew_log2
        signed = d.a_signed
        a = u._read(d.vs2, sl, 0, vl, signed)
        if not d.vm:
            a = tuple(p for p, c in zip(a, u._mask_str(0, vl)) if c == "1")
        init = u._read(d.vs1, sl + 1, 0, 1, signed)[0]
        u._write(d.vd, sl + 1, 0, ((init + sum(a)) & _m(2 * vt.sew),))
    return u._result("reduce", vt.lmul_log2, True)
