"""Handlers for the vector loads and stores that address memory element by element: indexed
(vluxei/vloxei/vsuxei/vsoxei) and segment (vlseg/vsseg, vlsseg/vssseg, vluxseg/vloxseg ...,
vlseg<nf>e<eew>ff) accesses.  A non-segment unit-stride or strided access stays in
:mod:`exec_mem`.

Segment i of an access is its nf fields, field f going to (or from) register group
vd + f*EMUL.  Accesses are done in element order, unordered and ordered alike (a valid
order for both).  A MemoryFault on segment i sets vstart to i - segments before it are
complete - and is re-raised; a fault-only-first load instead shortens vl to i when i > 0.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import MemoryFault
from .exec_ext import emul_check, overlap_check
from .insn import Insn
from .types import ExecResult, VectorMemory, XRegs

if TYPE_CHECKING:
    from .unit import RVVUnit

XMASK = (1 << 64) - 1
TOP = 1 << 64


def _layout(u: "RVVUnit", d: Insn) -> tuple[int, int, int]:
    """Check the access against vtype; return (data EEW log2 in bytes, data EMUL log2,
    registers per field group)."""
    vt = u._need_vtype(d)
    nf = d.nregs
    if d.form == "indexed":
        ie = emul_check(u, d, vt, d.eew_log2 - vt.sew_log2, d.vs2)
        sl, e = vt.sew_log2, vt.lmul_log2
    else:
        sl = d.eew_log2
        e = sl - vt.sew_log2 + vt.lmul_log2
        if not -3 <= e <= 3:
            raise u._illegal(d, f"EMUL=2^{e} (EEW/SEW*LMUL) is out of range")
    g = 1 << max(e, 0)
    if d.vd & (g - 1):
        raise u._illegal(d, f"register group not aligned to EMUL={g}")
    if nf * g > 8:
        raise u._illegal(d, f"NFIELDS*EMUL = {nf * g} exceeds 8")
    if d.vd + nf * g > 32:
        raise u._illegal(d, "the segment's register groups run past v31")
    load = d.kind == "load"
    if load and not d.vm and d.vd == 0:
        raise u._illegal(d, "masked destination overlaps v0")
    if load and d.form == "indexed":
        gi = 1 << max(ie, 0)
        if nf > 1:
            if d.vd < d.vs2 + gi and d.vs2 < d.vd + nf * g:
                raise u._illegal(d, "segment destination overlaps the index group")
        else:
            overlap_check(u, d, d.vd, e, d.vs2, ie, sl, d.eew_log2)
    return sl, e, g


def _addresses(u: "RVVUnit", d: Insn, x: XRegs, start: int, vl: int, eb: int) -> list[int]:
    base = x.read(d.rs1)
    n = vl - start
    if d.form == "indexed":
        idx = u._read(d.vs2, d.eew_log2, start, n)
        return [base + i for i in idx]
    if d.form == "strided":
        stride = x.read(d.rs2)
        if stride >> 63:
            stride -= TOP
    else:
        stride = d.nregs * eb
    return [base + i * stride for i in range(start, vl)]


def run_memx(u: "RVVUnit", d: Insn, x: XRegs, mem: VectorMemory) -> ExecResult:
    sl, e, g = _layout(u, d)
    start, vl = u.vstart, u.vl
    load = d.kind == "load"
    nf = d.nregs
    if start < vl:
        eb = 1 << sl
        vlenb = u.vlenb
        v = u.v
        mask = None if d.vm else u._mask_str(start, vl - start)
        addrs = _addresses(u, d, x, start, vl, eb)
        fields = [(d.vd + f * g) * vlenb for f in range(nf)]
        for k, a in enumerate(addrs):
            if mask is not None and mask[k] != "1":
                continue
            i = start + k
            try:
                if load:
                    if a + nf * eb <= TOP:
                        data = mem.load(a, nf * eb)
                    else:
                        data = b"".join(mem.load((a + f * eb) & XMASK, eb) for f in range(nf))
                    for f, o in enumerate(fields):
                        v[o + i * eb:o + (i + 1) * eb] = data[f * eb:(f + 1) * eb]
                else:
                    data = b"".join(bytes(v[o + i * eb:o + (i + 1) * eb]) for o in fields)
                    if a + nf * eb <= TOP and (a & 0xFFF) + nf * eb <= 0x1000:
                        mem.store(a, data)
                    else:      # crosses a page: field by field, so a fault is on a field
                        for f in range(nf):
                            mem.store((a + f * eb) & XMASK, data[f * eb:(f + 1) * eb])
            except MemoryFault:
                if d.form == "ff" and i > 0:
                    u.vl = i          # fault-only-first: shorten vl instead of trapping
                    break
                u.vstart = i
                raise
    dirty = load or start != 0
    u.vstart = 0
    kind = "strided" if d.form in ("indexed", "strided") else ("load" if load else "store")
    return u._result(kind, max(e, 0) + (nf - 1).bit_length(), dirty)
