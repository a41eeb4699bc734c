"""Specialised executors for the hot vector instructions (issue 19: an m1 instruction through the
trap path in at most 3 µs).

A vector loop runs the same few words with the same vtype and vl over and over.  For such a word
the general handler re-checks vtype legality, register-group alignment and the mask, and
recomputes register-file offsets, lane masks and the cost result on every execution.  Here the
unit builds, once per (word, vtype, vl), a closure with all of that folded in.  It applies only
to the plain case — unmasked (vm=1), vstart = 0, vl > 0, a valid and legal vtype — and checks
on each call that vtype, vl and vstart are still those it was built for; anything else (a
changed vtype/vl, a non-zero vstart after a fault, a page-crossing store, a faulting access)
goes to the general handler, which is the reference behaviour.  So the architectural result,
the trap raised and the cycles charged are those of the general handler in every case.

Covered: unmasked integer add/sub/rsub/and/or/xor (.vv/.vx/.vi, the SWAR path of
:func:`exec_arith.run_binop`) and unit-stride vle<eew>.v / vse<eew>.v.

vsetvli / vsetivli are the exception to "built for one state": their vtype is in the word, so
the executor folds in its decode (VLMAX, legality) and, where the AVL is in the word too
(vsetivli, or rs1 = x0 with rd != x0: AVL = VLMAX), the new vl; it is valid in any state, as
it only writes the state.  (The AVL of ``rs1 = rd = x0`` is the current vl: read per call.)
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ...errors import MemoryFault
from . import exec_arith as A
from . import exec_cfg as C
from . import exec_mem as M
from .insn import Insn
from .types import ExecResult, VectorMemory, XRegs
from .vtype import VILL, decode_vtype

if TYPE_CHECKING:
    from .unit import RVVUnit

Fast = Callable[[XRegs, VectorMemory], ExecResult]
TOP = 1 << 64
PAGE_MASK = 0xFFF


def specialize(u: "RVVUnit", d: Insn) -> Fast | None:
    """A closure executing ``d`` for the unit's current vtype and vl, or None when the word or
    the current state is not the plain case this module handles."""
    if d.run is C.run_vsetvl:
        return _vsetvl_imm(u, d)        # valid in every state: it is what sets the state
    if u.vstart or not u.vl or u._vt is None or not d.vm:
        return None
    build = _BUILDERS.get(d.run)
    return build(u, d) if build is not None else None


def _binop(u: "RVVUnit", d: Insn) -> Fast | None:
    swar = d.swar
    vt = u._vt
    if swar is None or vt is None:
        return None
    g = vt.group
    if g > 1 and (d.vd | d.vs2 | (d.vs1 if d.form == "vv" else 0)) & (g - 1):
        return None               # the general handler raises the illegal-instruction trap
    word, vtr, vl = d.word, u._vtype, u.vl
    sl = vt.sew_log2
    v, vlenb = u.v, u.vlenb
    n = vl << sl
    o2 = d.vs2 * vlenb
    od = d.vd * vlenb
    e2, ed = o2 + n, od + n
    h = A._lane_top(sl, vl)
    full = (1 << (n * 8)) - 1
    res = u._result(d.kind, vt.lmul_log2, True)
    frm = int.from_bytes
    if d.form == "vv":
        o1 = d.vs1 * vlenb
        e1 = o1 + n

        def run_vv(x: XRegs, mem: VectorMemory) -> ExecResult:
            if u._vtype != vtr or u.vl != vl or u.vstart:
                return u._respecialize(word, x, mem)
            v[od:ed] = swar(frm(v[o2:e2], "little"), frm(v[o1:e1], "little"), h, full
                            ).to_bytes(n, "little")
            return res
        return run_vv
    eb = 1 << sl
    smask = (1 << (eb * 8)) - 1
    if d.form == "vi":
        b = frm((d.imm & smask).to_bytes(eb, "little") * vl, "little")

        def run_vi(x: XRegs, mem: VectorMemory) -> ExecResult:
            if u._vtype != vtr or u.vl != vl or u.vstart:
                return u._respecialize(word, x, mem)
            v[od:ed] = swar(frm(v[o2:e2], "little"), b, h, full).to_bytes(n, "little")
            return res
        return run_vi
    rs1 = d.rs1

    def run_vx(x: XRegs, mem: VectorMemory) -> ExecResult:
        if u._vtype != vtr or u.vl != vl or u.vstart:
            return u._respecialize(word, x, mem)
        bx = frm((x.read(rs1) & smask).to_bytes(eb, "little") * vl, "little")
        v[od:ed] = swar(frm(v[o2:e2], "little"), bx, h, full).to_bytes(n, "little")
        return res
    return run_vx


def _mem_setup(u: "RVVUnit", d: Insn) -> tuple[int, int, ExecResult] | None:
    """(register-file offset, bytes, cost result) of a legal unit-stride access, else None."""
    if d.form != "unit":
        return None
    vt = u._vt
    assert vt is not None
    e = d.eew_log2 - vt.sew_log2 + vt.lmul_log2
    if not -3 <= e <= 3 or d.vd & ((1 << max(e, 0)) - 1):
        return None               # illegal: the general handler raises
    load = d.run is M.run_load
    return d.vd * u.vlenb, u.vl << d.eew_log2, u._result("load" if load else "store", e, load)


def _unit_stride(u: "RVVUnit", d: Insn) -> Fast | None:
    """A unit-stride vle/vse: the register bytes move in one load or store (one page for a store)."""
    s = _mem_setup(u, d)
    if s is None:
        return None
    vb, size, res = s
    ve = vb + size
    word, vtr, vl, rs1, v, run = d.word, u._vtype, u.vl, d.rs1, u.v, d.run

    def run_load(x: XRegs, mem: VectorMemory) -> ExecResult:
        if u._vtype != vtr or u.vl != vl or u.vstart:
            return u._respecialize(word, x, mem)
        base = x.read(rs1)
        if base + size > TOP:
            return run(u, d, x, mem)
        try:
            data = mem.load(base, size)
        except MemoryFault:
            return run(u, d, x, mem)    # redone element by element: vstart at the fault
        v[vb:ve] = data
        return res

    def run_store(x: XRegs, mem: VectorMemory) -> ExecResult:
        if u._vtype != vtr or u.vl != vl or u.vstart:
            return u._respecialize(word, x, mem)
        base = x.read(rs1)
        # one page only: the general handler splits at pages so a fault in a later page is
        # never preceded by a partial write; a store inside one page writes all or nothing
        if (base & PAGE_MASK) + size > PAGE_MASK + 1:
            return run(u, d, x, mem)
        try:
            mem.store(base, bytes(v[vb:ve]))
        except MemoryFault:
            return run(u, d, x, mem)
        return res
    return run_load if run is M.run_load else run_store


def _vsetvl_imm(u: "RVVUnit", d: Insn) -> Fast | None:
    """vsetvli / vsetivli: exec_cfg.run_vsetvl with the word's vtype decoded once."""
    if d.form == "vsetvli":
        raw = (d.word >> 20) & 0x7FF
    elif d.form == "vsetivli":
        raw = (d.word >> 20) & 0x3FF
    else:
        return None               # vsetvl: vtype from a register, decoded per execution
    vt = decode_vtype(raw, u.vlen, u.elen)
    res = u._result("vsetvl", 0, True)
    rd, rs1 = d.rd, d.rs1
    if vt is None:
        def run_vill(x: XRegs, mem: VectorMemory) -> ExecResult:
            u._vt = None
            u._vtype = VILL
            u.vl = u.vstart = 0
            if rd:
                x.write(rd, 0)
            return res
        return run_vill
    vtr, vlmax = vt.raw, vt.vlmax
    if d.form == "vsetivli" or rd:
        if d.form == "vsetivli":
            vl = min(rs1, vlmax)            # the 5-bit immediate AVL
        elif rs1 == 0:
            vl = vlmax                      # rs1 = x0, rd != x0: AVL = VLMAX
        else:
            vl = -1                         # AVL from x[rs1]

        if vl < 0:
            def run_avl(x: XRegs, mem: VectorMemory) -> ExecResult:
                n = x.read(rs1)
                n = n if n < vlmax else vlmax
                u._vt = vt
                u._vtype = vtr
                u.vl = n
                u.vstart = 0
                x.write(rd, n)      # (rd != x0 here)
                return res
            return run_avl

        def run_const(x: XRegs, mem: VectorMemory) -> ExecResult:
            u._vt = vt
            u._vtype = vtr
            u.vl = vl
            u.vstart = 0
            if rd:
                x.write(rd, vl)
            return res
        return run_const
    if rs1:
        def run_avl0(x: XRegs, mem: VectorMemory) -> ExecResult:     # rd = x0
            n = x.read(rs1)
            u._vt = vt
            u._vtype = vtr
            u.vl = n if n < vlmax else vlmax
            u.vstart = 0
            return res
        return run_avl0

    def run_keep(x: XRegs, mem: VectorMemory) -> ExecResult:        # rs1 = rd = x0: keep vl
        old = u._vt
        if old is None or old.vlmax != vlmax:
            u._vt = None                    # VLMAX would change: vill (see unit.py)
            u._vtype = VILL
            u.vl = 0
        else:
            u._vt = vt
            u._vtype = vtr                  # vl = min(vl, VLMAX) = vl
        u.vstart = 0
        return res
    return run_keep


_BUILDERS: dict[object, Callable[["RVVUnit", Insn], Fast | None]] = {
    A.run_binop: _binop, M.run_load: _unit_stride, M.run_store: _unit_stride,
}
