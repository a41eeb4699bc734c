"""Handlers for vector loads and stores (LOAD-FP / STORE-FP major opcodes).

Fast path: one bulk ``mem.load``/``mem.store`` for a contiguous unmasked access.  Stores are
split at 4 KiB page boundaries so that a fault in a later page cannot be preceded by a
partial write inside the same call.  When a bulk access faults the handler redoes the
access element by element, so the fault is reported on the exact element: vstart is set to
that element's index (earlier elements are already done) and the MemoryFault re-raised.
Masked-off elements are never accessed on the element-by-element path, so they cannot fault.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import MemoryFault
from .insn import Insn
from .types import ExecResult, VectorMemory, XRegs

if TYPE_CHECKING:
    from .unit import RVVUnit

XMASK = (1 << 64) - 1
TOP = 1 << 64


def _emul_log2(u: "RVVUnit", d: Insn) -> int:
    """Check EMUL = EEW/SEW*LMUL and the destination/source group; return log2(EMUL)."""
    vt = u._need_vtype(d)
    e = d.eew_log2 - vt.sew_log2 + vt.lmul_log2
    if not -3 <= e <= 3:
        raise u._illegal(d, f"EMUL=2^{e} (EEW/SEW*LMUL) is out of range")
    g = 1 << max(e, 0)
    if d.vd & (g - 1):
        raise u._illegal(d, f"register group not aligned to EMUL={g}")
    if not d.vm and d.vd == 0 and d.kind.startswith("load"):
        raise u._illegal(d, "masked destination overlaps v0")
    return e


def _load_elems(u: "RVVUnit", mem: VectorMemory, base: int, stride: int, vbase: int, eb: int,
                start: int, evl: int, mask: str | None, ff: bool = False) -> None:
    """Element-by-element load; sets vstart and re-raises on a fault (or trims vl for ff)."""
    v = u.v
    for i in range(start, evl):
        if mask is not None and mask[i - start] != "1":
            continue
        try:
            data = mem.load((base + i * stride) & XMASK, eb)
        except MemoryFault:
            if ff and i > 0:
                u.vl = i          # fault-only-first: shorten vl instead of trapping
                return
            u.vstart = i
            raise
        o = vbase + i * eb
        v[o:o + eb] = data


def _load_contig(u: "RVVUnit", mem: VectorMemory, base: int, vbase: int, eb: int, start: int,
                 evl: int, mask: str | None, ff: bool = False) -> None:
    lo = base + start * eb
    size = (evl - start) * eb
    if lo + size <= TOP:
        try:
            data = mem.load(lo, size)
        except MemoryFault:
            data = None
        if data is not None:
            v = u.v
            if mask is None:
                v[vbase + start * eb:vbase + evl * eb] = data
            else:
                for k, c in enumerate(mask):
                    if c == "1":
                        o = vbase + (start + k) * eb
                        v[o:o + eb] = data[k * eb:(k + 1) * eb]
            return
    _load_elems(u, mem, base, eb, vbase, eb, start, evl, mask, ff)


def _store_elems(u: "RVVUnit", mem: VectorMemory, base: int, stride: int, vbase: int, eb: int,
                 start: int, evl: int, mask: str | None) -> None:
    v = u.v
    for i in range(start, evl):
        if mask is not None and mask[i - start] != "1":
            continue
        o = vbase + i * eb
        try:
            mem.store((base + i * stride) & XMASK, bytes(v[o:o + eb]))
        except MemoryFault:
            u.vstart = i
            raise


def _store_contig(u: "RVVUnit", mem: VectorMemory, base: int, vbase: int, eb: int, start: int,
                  evl: int, mask: str | None) -> None:
    if mask is not None:
        _store_elems(u, mem, base, eb, vbase, eb, start, evl, mask)
        return
    v = u.v
    i = start
    while i < evl:
        a = (base + i * eb) & XMASK
        room = (((a | 0xFFF) + 1) - a) // eb        # whole elements left in this page
        j = min(evl, i + max(1, room))
        try:
            mem.store(a, bytes(v[vbase + i * eb:vbase + j * eb]))
        except MemoryFault:
            _store_elems(u, mem, base, eb, vbase, eb, i, j, None)
        i = j


def _access_setup(u: "RVVUnit", d: Insn) -> tuple[int, int]:
    """(EMUL log2, effective vl) of a unit-stride/strided/mask access; checks vtype for vlm/vsm."""
    if d.form == "mask":
        u._need_vtype(d)
        return 0, (u.vl + 7) >> 3
    return _emul_log2(u, d), u.vl


def _operands(u: "RVVUnit", d: Insn, x: XRegs, start: int, evl: int) -> tuple[int, int, int, str | None]:
    """(element bytes, base address, register-file offset, mask) shared by loads and stores."""
    mask = None if d.vm else u._mask_str(start, evl - start)
    return 1 << d.eew_log2, x.read(d.rs1), d.vd * u.vlenb, mask


def _stride(x: XRegs, d: Insn) -> int:
    stride = x.read(d.rs2)
    return stride - TOP if stride >> 63 else stride


def run_load(u: "RVVUnit", d: Insn, x: XRegs, mem: VectorMemory) -> ExecResult:
    """vle<eew>.v, vle<eew>ff.v, vlse<eew>.v and vlm.v."""
    e, evl = _access_setup(u, d)
    start = u.vstart
    if start < evl:
        eb, base, vbase, mask = _operands(u, d, x, start, evl)
        if d.form == "strided":
            _load_elems(u, mem, base, _stride(x, d), vbase, eb, start, evl, mask)
        else:
            _load_contig(u, mem, base, vbase, eb, start, evl, mask, d.form == "ff")
    u.vstart = 0
    return u._result("strided" if d.form == "strided" else "load", e, True)


def run_store(u: "RVVUnit", d: Insn, x: XRegs, mem: VectorMemory) -> ExecResult:
    """vse<eew>.v, vsse<eew>.v and vsm.v."""
    e, evl = _access_setup(u, d)
    start = u.vstart
    if start < evl:
        eb, base, vbase, mask = _operands(u, d, x, start, evl)
        if d.form == "strided":
            _store_elems(u, mem, base, _stride(x, d), vbase, eb, start, evl, mask)
        else:
            _store_contig(u, mem, base, vbase, eb, start, evl, mask)
    dirty = start != 0
    u.vstart = 0
    return u._result("strided" if d.form == "strided" else "store", e, dirty)


def run_whole(u: "RVVUnit", d: Insn, x: XRegs, mem: VectorMemory) -> ExecResult:
    """vl<nr>re<eew>.v and vs<nr>r.v: independent of vtype and vl."""
    nr = d.nregs
    if d.vd & (nr - 1):
        raise u._illegal(d, f"register v{d.vd} not aligned to {nr}")
    eb = 1 << d.eew_log2
    evl = (nr * u.vlenb) // eb
    start = u.vstart
    load = d.kind == "load"
    if start < evl:
        base = x.read(d.rs1)
        vbase = d.vd * u.vlenb
        if load:
            _load_contig(u, mem, base, vbase, eb, start, evl, None)
        else:
            _store_contig(u, mem, base, vbase, eb, start, evl, None)
    dirty = load or start != 0
    u.vstart = 0
    return u._result("load" if load else "store", nr.bit_length() - 1, dirty)
