"""Handlers for vsetvli/vsetivli/vsetvl and for CSR instructions on vector CSRs."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import IllegalInstruction
from .insn import Insn
from .types import ExecResult, VectorMemory, XRegs
from .vtype import VILL, decode_vtype

if TYPE_CHECKING:
    from .unit import RVVUnit

XMASK = (1 << 64) - 1

CSR_VSTART, CSR_VXSAT, CSR_VXRM, CSR_VCSR = 0x008, 0x009, 0x00A, 0x00F
CSR_VL, CSR_VTYPE, CSR_VLENB = 0xC20, 0xC21, 0xC22
VECTOR_CSRS = {CSR_VSTART: "vstart", CSR_VXSAT: "vxsat", CSR_VXRM: "vxrm", CSR_VCSR: "vcsr",
               CSR_VL: "vl", CSR_VTYPE: "vtype", CSR_VLENB: "vlenb"}
READ_ONLY = {CSR_VL, CSR_VTYPE, CSR_VLENB}


def run_vsetvl(u: "RVVUnit", d: Insn, x: XRegs, mem: VectorMemory) -> ExecResult:
    w = d.word
    # read every source before writing rd (rd may equal rs1/rs2)
    if d.form == "vsetvli":
        raw = (w >> 20) & 0x7FF
    elif d.form == "vsetivli":
        raw = (w >> 20) & 0x3FF
    else:
        raw = x.read(d.rs2)
    vt = decode_vtype(raw, u.vlen, u.elen)
    vl = 0
    if vt is not None:
        if d.form == "vsetivli":
            avl = d.rs1                      # 5-bit unsigned immediate AVL
        elif d.rs1 != 0:
            avl = x.read(d.rs1)
        elif d.rd != 0:
            avl = XMASK                      # rs1=x0, rd!=x0: AVL = VLMAX
        else:
            # rs1=x0, rd=x0: keep vl; only defined when VLMAX does not change
            old = u._vt
            if old is None or old.vlmax != vt.vlmax:
                vt = None
            avl = u.vl
        if vt is not None:
            vl = min(avl, vt.vlmax)
    # the vtype setter's work, with the decode already done (vt is the setter's decode of vt.raw)
    u._vt = vt
    u._vtype = vt.raw if vt is not None else VILL
    u.vl = vl
    u.vstart = 0
    if d.rd:
        x.write(d.rd, vl)
    return u._result("vsetvl", 0, True)


def run_csr(u: "RVVUnit", d: Insn, x: XRegs, mem: VectorMemory) -> ExecResult:
    csr = d.csr
    op = d.funct3 & 3                    # 1 = write, 2 = set, 3 = clear
    src = x.read(d.rs1) if d.funct3 < 4 else d.rs1
    writes = op == 1 or d.rs1 != 0       # csrrs/csrrc with x0/zero immediate only read
    if writes and csr in READ_ONLY:
        raise IllegalInstruction(d.word, f"{d.name}: CSR {VECTOR_CSRS[csr]} is read-only")
    if csr == CSR_VSTART:
        old = u.vstart
    elif csr == CSR_VXSAT:
        old = u.vxsat
    elif csr == CSR_VXRM:
        old = u.vxrm
    elif csr == CSR_VCSR:
        old = (u.vxrm << 1) | u.vxsat
    elif csr == CSR_VL:
        old = u.vl
    elif csr == CSR_VTYPE:
        old = u.vtype
    else:
        old = u.vlenb
    if writes:
        new = src if op == 1 else (old | src) if op == 2 else (old & ~src)
        new &= XMASK
        if csr == CSR_VSTART:
            u.vstart = new & (u.vlen - 1)    # lg2(VLEN) bits hold any element index
        elif csr == CSR_VXSAT:
            u.vxsat = new & 1
        elif csr == CSR_VXRM:
            u.vxrm = new & 3
        else:
            u.vxrm = (new >> 1) & 3
            u.vxsat = new & 1
    if d.rd:
        x.write(d.rd, old)
    return u._result("csr", 0, writes)
