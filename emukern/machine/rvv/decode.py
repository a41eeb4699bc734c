"""Turn a 32-bit word into an :class:`Insn` (mnemonic, operand layout, handler).

Decoding never depends on vtype, so the result is cached per word by the unit; all
vtype-dependent legality (alignment, EMUL range, vill) is checked when the handler runs.
Words the unit will never execute decode to an Insn whose handler raises
IllegalInstruction with a message naming the instruction.
"""
from __future__ import annotations

from typing import Any

from ...errors import IllegalInstruction
from . import alu
from . import exec_arith as A
from . import exec_cfg as C
from . import exec_ext as E
from . import exec_mem as M
from . import exec_memx as MX
from .insn import Insn

NOT_IMPL = "is not implemented by emukern's RVV unit"
EEW_OF_WIDTH = {0: 8, 5: 16, 6: 32, 7: 64}

# OP-V funct3 -> operand suffix
_SUFFIX = {0: "vv", 1: "vv", 2: "vv", 3: "vi", 4: "vx", 5: "vf", 6: "vx"}
_CAT = {0: "I", 3: "I", 4: "I", 2: "M", 6: "M", 1: "F", 5: "F"}

# OPIVV/OPIVX/OPIVI: funct6 -> (name, forms among V/X/I); implemented ones
_OPI_BIN = {
    0x00: ("vadd", "VXI"), 0x02: ("vsub", "VX"), 0x03: ("vrsub", "XI"),
    0x04: ("vminu", "VX"), 0x05: ("vmin", "VX"), 0x06: ("vmaxu", "VX"), 0x07: ("vmax", "VX"),
    0x09: ("vand", "VXI"), 0x0A: ("vor", "VXI"), 0x0B: ("vxor", "VXI"),
    0x25: ("vsll", "VXI"), 0x28: ("vsrl", "VXI"), 0x29: ("vsra", "VXI"),
}
_OPI_CMP = {
    0x18: ("vmseq", "VXI"), 0x19: ("vmsne", "VXI"), 0x1A: ("vmsltu", "VX"),
    0x1B: ("vmslt", "VX"), 0x1C: ("vmsleu", "VXI"), 0x1D: ("vmsle", "VXI"),
    0x1E: ("vmsgtu", "XI"), 0x1F: ("vmsgt", "XI"),
}
_UIMM_OPS = {"vsll", "vsrl", "vsra", "vslideup", "vslidedown"}
# recognised but unimplemented: funct6 -> (name, {form letter: suffix})
_OPI_UNIMPL: dict[int, tuple[str, dict[str, str]]] = {
    0x0C: ("vrgather", {"V": "vv", "X": "vx", "I": "vi"}),
    0x0E: ("vrgatherei16", {"V": "vv"}),
    0x10: ("vadc", {"V": "vvm", "X": "vxm", "I": "vim"}),
    0x11: ("vmadc", {"V": "vvm", "X": "vxm", "I": "vim"}),
    0x12: ("vsbc", {"V": "vvm", "X": "vxm"}),
    0x13: ("vmsbc", {"V": "vvm", "X": "vxm"}),
    0x20: ("vsaddu", {"V": "vv", "X": "vx", "I": "vi"}),
    0x21: ("vsadd", {"V": "vv", "X": "vx", "I": "vi"}),
    0x22: ("vssubu", {"V": "vv", "X": "vx"}),
    0x23: ("vssub", {"V": "vv", "X": "vx"}),
    0x27: ("vsmul", {"V": "vv", "X": "vx"}),
    0x2A: ("vssrl", {"V": "vv", "X": "vx", "I": "vi"}),
    0x2B: ("vssra", {"V": "vv", "X": "vx", "I": "vi"}),
    0x2C: ("vnsrl", {"V": "wv", "X": "wx", "I": "wi"}),
    0x2D: ("vnsra", {"V": "wv", "X": "wx", "I": "wi"}),
    0x2E: ("vnclipu", {"V": "wv", "X": "wx", "I": "wi"}),
    0x2F: ("vnclip", {"V": "wv", "X": "wx", "I": "wi"}),
    0x30: ("vwredsumu", {"V": "vs"}),
    0x31: ("vwredsum", {"V": "vs"}),
}
_RED = {0: "vredsum", 1: "vredand", 2: "vredor", 3: "vredxor", 4: "vredminu", 5: "vredmin",
        6: "vredmaxu", 7: "vredmax"}
_MASKLOGIC = {0x18: "vmandn", 0x19: "vmand", 0x1A: "vmor", 0x1B: "vmxor", 0x1C: "vmorn",
              0x1D: "vmnand", 0x1E: "vmnor", 0x1F: "vmxnor"}
_OPM_BIN = {0x20: "vdivu", 0x21: "vdiv", 0x22: "vremu", 0x23: "vrem", 0x24: "vmulhu",
            0x25: "vmul", 0x26: "vmulhsu", 0x27: "vmulh"}
_OPM_UNIMPL: dict[int, tuple[str, dict[str, str]]] = {
    0x08: ("vaaddu", {"V": "vv", "X": "vx"}), 0x09: ("vaadd", {"V": "vv", "X": "vx"}),
    0x0A: ("vasubu", {"V": "vv", "X": "vx"}), 0x0B: ("vasub", {"V": "vv", "X": "vx"}),
    0x17: ("vcompress", {"V": "vm"}),
    0x29: ("vmadd", {"V": "vv", "X": "vx"}), 0x2B: ("vnmsub", {"V": "vv", "X": "vx"}),
    0x2D: ("vmacc", {"V": "vv", "X": "vx"}), 0x2F: ("vnmsac", {"V": "vv", "X": "vx"}),
    0x30: ("vwaddu", {"V": "vv", "X": "vx"}), 0x31: ("vwadd", {"V": "vv", "X": "vx"}),
    0x32: ("vwsubu", {"V": "vv", "X": "vx"}), 0x33: ("vwsub", {"V": "vv", "X": "vx"}),
    0x34: ("vwaddu", {"V": "wv", "X": "wx"}), 0x35: ("vwadd", {"V": "wv", "X": "wx"}),
    0x36: ("vwsubu", {"V": "wv", "X": "wx"}), 0x37: ("vwsub", {"V": "wv", "X": "wx"}),
    0x38: ("vwmulu", {"V": "vv", "X": "vx"}), 0x3A: ("vwmulsu", {"V": "vv", "X": "vx"}),
    0x3B: ("vwmul", {"V": "vv", "X": "vx"}), 0x3C: ("vwmaccu", {"V": "vv", "X": "vx"}),
    0x3D: ("vwmacc", {"V": "vv", "X": "vx"}), 0x3E: ("vwmaccus", {"X": "vx"}),
    0x3F: ("vwmaccsu", {"V": "vv", "X": "vx"}),
}
_VMUNARY0 = {1: "vmsbf.m", 2: "vmsof.m", 3: "vmsif.m", 16: "viota.m"}
_VXUNARY0 = {2: "vzext.vf8", 3: "vsext.vf8", 4: "vzext.vf4", 5: "vsext.vf4", 6: "vzext.vf2",
             7: "vsext.vf2"}
_FP = {
    0x00: "vfadd", 0x01: "vfredusum", 0x02: "vfsub", 0x03: "vfredosum", 0x04: "vfmin",
    0x05: "vfredmin", 0x06: "vfmax", 0x07: "vfredmax", 0x08: "vfsgnj", 0x09: "vfsgnjn",
    0x0A: "vfsgnjx", 0x0E: "vfslide1up", 0x0F: "vfslide1down", 0x10: "vfmv", 0x12: "vfcvt",
    0x13: "vfunary1", 0x17: "vfmerge", 0x18: "vmfeq", 0x19: "vmfle", 0x1B: "vmflt",
    0x1C: "vmfne", 0x1D: "vmfgt", 0x1F: "vmfge", 0x20: "vfdiv", 0x21: "vfrdiv", 0x24: "vfmul",
    0x27: "vfrsub", 0x28: "vfmadd", 0x29: "vfnmadd", 0x2A: "vfmsub", 0x2B: "vfnmsub",
    0x2C: "vfmacc", 0x2D: "vfnmacc", 0x2E: "vfmsac", 0x2F: "vfnmsac", 0x30: "vfwadd",
    0x31: "vfwredusum", 0x32: "vfwsub", 0x33: "vfwredosum", 0x34: "vfwadd.w", 0x36: "vfwsub.w",
    0x38: "vfwmul", 0x3C: "vfwmacc", 0x3D: "vfwnmacc", 0x3E: "vfwmsac", 0x3F: "vfwnmsac",
}

# operand layouts used by disasm
VV = ("vd", "vs2", "vs1", "mask")
VX = ("vd", "vs2", "rs1", "mask")
VI = ("vd", "vs2", "simm", "mask")
VIU = ("vd", "vs2", "uimm", "mask")
VF = ("vd", "vs2", "fs1", "mask")


def _raise(u: Any, d: Insn, x: Any, mem: Any) -> Any:
    raise IllegalInstruction(d.word, d.reason)


def _bad(word: int, name: str, reason: str, ops: tuple[str, ...] = ()) -> Insn:
    return Insn(word, name, _raise, reason=reason, ops=ops)


def _unimpl(word: int, name: str, ops: tuple[str, ...] = ()) -> Insn:
    return _bad(word, name, f"{name} {NOT_IMPL}", ops)


def _reserved(word: int, what: str) -> Insn:
    return _bad(word, "", f"reserved encoding: {what}")


def _simm5(f: int) -> int:
    return f - 32 if f & 16 else f


def decode(word: int) -> Insn:
    op = word & 0x7F
    if op == 0x57:
        return _decode_opv(word)
    if op in (0x07, 0x27):
        return _decode_mem(word)
    if op == 0x73:
        return _decode_csr(word)
    return _bad(word, "", "not a vector instruction")


def _generic_ops(f3: int) -> tuple[str, ...]:
    return {0: VV, 2: VV, 1: VV, 3: VI, 4: VX, 6: VX, 5: VF}[f3]


def _decode_opv(w: int) -> Insn:
    f3 = (w >> 12) & 7
    if f3 == 7:
        return _decode_cfg(w)
    f6 = w >> 26
    vm = (w >> 25) & 1
    vs1 = (w >> 15) & 31
    vs2 = (w >> 20) & 31
    sfx = _SUFFIX[f3]
    letter = {"vv": "V", "vx": "X", "vi": "I", "vf": "F"}[sfx]
    form = sfx
    fn: Any                      # an ALU function (its signature depends on the class)
    ops: tuple[str, ...]
    cat = _CAT[f3]
    imm = _simm5(vs1)
    where = f"OP-V funct3={f3} funct6={f6:#04x}"

    if cat == "F":
        base = _FP.get(f6)
        if base is None:
            return _reserved(w, where)
        return _unimpl(w, f"{base}.{sfx}" if "." not in base else base, _generic_ops(f3))

    if cat == "I":
        if f6 in _OPI_BIN and letter in _OPI_BIN[f6][1]:
            name = _OPI_BIN[f6][0]
            fn, asg, bsg = alu.BINOPS[name]
            if letter == "I" and name in _UIMM_OPS:
                imm, ops = vs1, VIU
            else:
                ops = {"V": VV, "X": VX, "I": VI}[letter]
            return Insn(w, f"{name}.{sfx}", A.run_binop, form=form, fn=fn, a_signed=asg,
                        b_signed=bsg, imm=imm, ops=ops, swar=alu.SWAR.get(name))
        if f6 in _OPI_CMP and letter in _OPI_CMP[f6][1]:
            name = _OPI_CMP[f6][0]
            fn, sg = alu.CMPOPS[name]
            ops = {"V": VV, "X": VX, "I": VI}[letter]
            return Insn(w, f"{name}.{sfx}", A.run_cmp, form=form, fn=fn, a_signed=sg, imm=imm,
                        ops=ops)
        if f6 == 0x17:                       # vmerge / vmv.v
            if vm:
                if vs2 != 0:
                    return _reserved(w, "vmv.v.* with vs2 != v0")
                ops = {"V": ("vd", "vs1"), "X": ("vd", "rs1"), "I": ("vd", "simm")}[letter]
                return Insn(w, f"vmv.v.{letter.lower()}", A.run_merge, form=form, imm=imm,
                            ops=ops)
            ops = {"V": ("vd", "vs2", "vs1", "v0"), "X": ("vd", "vs2", "rs1", "v0"),
                   "I": ("vd", "vs2", "simm", "v0")}[letter]
            return Insn(w, f"vmerge.{sfx}m", A.run_merge, form=form, imm=imm, ops=ops)
        if f6 in (0x0E, 0x0F) and letter in "XI":
            name = "vslideup" if f6 == 0x0E else "vslidedown"
            return Insn(w, f"{name}.{sfx}", A.run_slide, form=form, imm=vs1,
                        ops=VX if letter == "X" else VIU)
        if f6 == 0x27 and letter == "I":     # vmv<nr>r.v
            if vs1 not in (0, 1, 3, 7):
                return _reserved(w, f"vmv<nr>r.v with nr={vs1 + 1}")
            return Insn(w, f"vmv{vs1 + 1}r.v", A.run_mvnr, nregs=vs1 + 1, ops=("vd", "vs2"))
        if f6 in E.OPI_EXT and letter in E.OPI_EXT[f6][1]:
            name, _, spec = E.OPI_EXT[f6]
            sfx2 = {"V": "wv", "X": "wx", "I": "wi"}[letter] if spec.s2 == 1 else sfx
            ops = _generic_ops(f3)
            if letter == "I" and name in E.UIMM_EXT:
                imm, ops = vs1, VIU
            return Insn(w, f"{name}.{sfx2}", E.run_elem, form=form, imm=imm, ops=ops,
                        spec=spec, kind=spec.kind)
        if f6 in _OPI_UNIMPL and letter in _OPI_UNIMPL[f6][1]:
            base, sfxs = _OPI_UNIMPL[f6]
            ops = _generic_ops(f3)
            if sfxs[letter].endswith("m"):
                ops = ops[:3] + ("v0",)
            name = f"{base}.{sfxs[letter]}"
            if base in ("vrgather", "vrgatherei16"):
                if letter == "I":
                    imm, ops = vs1, VIU
                return Insn(w, name, E.run_gather, form=form, imm=imm, ops=ops, kind="permute")
            if base in ("vadc", "vmadc", "vsbc", "vmsbc"):
                if base.startswith("vm") and vm:
                    name, ops = name[:-1], ops[:3]      # no carry in: vmadc.vv & co.
                return Insn(w, name, E.run_carry, form=form, imm=imm, ops=ops)
            if base in ("vwredsumu", "vwredsum"):
                return Insn(w, name, E.run_wreduce, form=form, a_signed=base == "vwredsum",
                            ops=ops, kind="reduce")
            return _unimpl(w, name, ops)
        return _reserved(w, where)

    # OPMVV / OPMVX
    if letter == "V":
        if f6 in _RED:
            name = _RED[f6]
            fn, sg = alu.REDOPS[name]
            return Insn(w, f"{name}.vs", A.run_reduce, form=form, fn=fn, a_signed=sg, ops=VV,
                        kind="reduce")
        if f6 in _MASKLOGIC:
            name = _MASKLOGIC[f6]
            if not vm:
                return _reserved(w, f"{name}.mm with vm=0")
            return Insn(w, f"{name}.mm", A.run_masklogic, fn=alu.MASKOPS[name],
                        ops=("vd", "vs2", "vs1"), kind="mask")
        if f6 == 0x10:                       # VWXUNARY0
            if vs1 == 0:
                return Insn(w, "vmv.x.s", A.run_mv_x_s, ops=("rd", "vs2"), kind="move")
            if vs1 == 16:
                return Insn(w, "vcpop.m", A.run_cpop_first, ops=("rd", "vs2", "mask"))
            if vs1 == 17:
                return Insn(w, "vfirst.m", A.run_cpop_first, ops=("rd", "vs2", "mask"))
            return _reserved(w, f"VWXUNARY0 vs1={vs1}")
        if f6 == 0x14:                       # VMUNARY0
            if vs1 == 17:
                return Insn(w, "vid.v", A.run_vid, ops=("vd", "mask"))
            if vs1 in _VMUNARY0:
                return Insn(w, _VMUNARY0[vs1], E.run_mask_unary, ops=("vd", "vs2", "mask"))
            return _reserved(w, f"VMUNARY0 vs1={vs1}")
        if f6 == 0x12:                       # VXUNARY0
            if vs1 in E.VXUNARY0:
                name, spec = E.VXUNARY0[vs1]
                return Insn(w, name, E.run_elem, form=form, spec=spec, ops=("vd", "vs2", "mask"))
            return _reserved(w, f"VXUNARY0 vs1={vs1}")
    else:
        if f6 == 0x10:                       # VRXUNARY0
            if vs2 == 0:
                return Insn(w, "vmv.s.x", A.run_mv_s_x, ops=("vd", "rs1"), kind="move")
            return _reserved(w, f"VRXUNARY0 vs2={vs2}")
        if f6 in (0x0E, 0x0F):
            name = "vslide1up" if f6 == 0x0E else "vslide1down"
            return Insn(w, f"{name}.vx", A.run_slide, form=form, ops=VX)
    if f6 in _OPM_BIN:
        name = _OPM_BIN[f6]
        fn, asg, bsg = alu.BINOPS[name]
        kind = "div" if "div" in name or "rem" in name else "mul"
        return Insn(w, f"{name}.{sfx}", A.run_binop, form=form, fn=fn, a_signed=asg,
                    b_signed=bsg, ops=VV if letter == "V" else VX, kind=kind)
    if f6 in E.OPM_EXT and letter in E.OPM_EXT[f6][1]:
        name, _, spec, sv, sx = E.OPM_EXT[f6]
        ops = _generic_ops(f3)
        if spec.acc:                 # llvm prints the multiply-add forms vd, vs1/rs1, vs2
            ops = ("vd", ops[2], "vs2", "mask")
        return Insn(w, f"{name}.{sv if letter == 'V' else sx}", E.run_elem, form=form,
                    spec=spec, ops=ops, kind=spec.kind)
    if f6 == 0x17 and letter == "V":
        if not vm:
            return _reserved(w, "vcompress.vm with vm=0")
        return Insn(w, "vcompress.vm", E.run_compress, ops=("vd", "vs2", "vs1"), kind="permute")
    if f6 in _OPM_UNIMPL and letter in _OPM_UNIMPL[f6][1]:
        base, sfxs = _OPM_UNIMPL[f6]
        return _unimpl(w, f"{base}.{sfxs[letter]}", _generic_ops(f3))
    return _reserved(w, where)


def _decode_cfg(w: int) -> Insn:
    if not w >> 31:
        return Insn(w, "vsetvli", C.run_vsetvl, form="vsetvli", ops=("rd", "rs1", "vtypei"),
                    kind="vsetvl")
    if (w >> 30) == 3:
        return Insn(w, "vsetivli", C.run_vsetvl, form="vsetivli",
                    ops=("rd", "uimm", "vtypei"), kind="vsetvl")
    if (w >> 25) & 0x3F:
        return _reserved(w, "OPCFG with bit 31 set and bits 30:25 non-zero")
    return Insn(w, "vsetvl", C.run_vsetvl, form="vsetvl", ops=("rd", "rs1", "rs2"),
                kind="vsetvl")


def _decode_mem(w: int) -> Insn:
    load = (w & 0x7F) == 0x07
    width = (w >> 12) & 7
    if width not in EEW_OF_WIDTH:
        return _bad(w, "", "not a vector instruction (scalar floating-point load/store)")
    if (w >> 28) & 1:
        return _reserved(w, "vector load/store with mew=1 (EEW > 64)")
    eew = EEW_OF_WIDTH[width]
    el2 = eew.bit_length() - 4
    nf = w >> 29
    mop = (w >> 26) & 3
    vm = (w >> 25) & 1
    sub = (w >> 20) & 31
    ls = "l" if load else "s"
    mask_op = ("mask",)
    base_ops = ("vd", "mem") + mask_op
    run = M.run_load if load else M.run_store
    kind = "load" if load else "store"
    if mop == 0:
        if sub == 0:
            if nf:
                return Insn(w, f"v{ls}seg{nf + 1}e{eew}.v", MX.run_memx, form="unit",
                            eew_log2=el2, nregs=nf + 1, ops=base_ops, kind=kind)
            return Insn(w, f"v{ls}e{eew}.v", run, form="unit", eew_log2=el2, ops=base_ops,
                        kind=kind)
        if sub == 0b01000:                   # whole registers
            n = nf + 1
            if n not in (1, 2, 4, 8):
                return _reserved(w, f"whole-register access of {n} registers")
            if not vm:
                return _reserved(w, "whole-register access with vm=0")
            if load:
                return Insn(w, f"vl{n}re{eew}.v", M.run_whole, eew_log2=el2, nregs=n,
                            ops=("vd", "mem"), kind="load")
            if eew != 8:
                return _reserved(w, f"vs{n}r.v with EEW={eew}")
            return Insn(w, f"vs{n}r.v", M.run_whole, eew_log2=0, nregs=n, ops=("vd", "mem"),
                        kind="store")
        if sub == 0b01011:                   # vlm.v / vsm.v
            if eew != 8 or nf or not vm:
                return _reserved(w, f"v{ls}m.v needs EEW=8, nf=0, vm=1")
            return Insn(w, f"v{ls}m.v", run, form="mask", eew_log2=0, ops=("vd", "mem"),
                        kind=kind)
        if sub == 0b10000 and load:
            if nf:
                return Insn(w, f"vlseg{nf + 1}e{eew}ff.v", MX.run_memx, form="ff",
                            eew_log2=el2, nregs=nf + 1, ops=base_ops, kind=kind)
            return Insn(w, f"vle{eew}ff.v", run, form="ff", eew_log2=el2, ops=base_ops,
                        kind=kind)
        return _reserved(w, f"unit-stride {'lumop' if load else 'sumop'}={sub:#x}")
    if mop == 2:
        ops = ("vd", "mem", "rs2") + mask_op
        if nf:
            return Insn(w, f"v{ls}sseg{nf + 1}e{eew}.v", MX.run_memx, form="strided",
                        eew_log2=el2, nregs=nf + 1, ops=ops, kind=kind)
        return Insn(w, f"v{ls}se{eew}.v", run, form="strided", eew_log2=el2, ops=ops, kind=kind)
    order = "u" if mop == 1 else "o"
    ops = ("vd", "mem", "vs2") + mask_op
    name = f"v{ls}{order}xseg{nf + 1}ei{eew}.v" if nf else f"v{ls}{order}xei{eew}.v"
    return Insn(w, name, MX.run_memx, form="indexed", eew_log2=el2, nregs=nf + 1, ops=ops,
                kind=kind)


def _decode_csr(w: int) -> Insn:
    f3 = (w >> 12) & 7
    csr = w >> 20
    if f3 in (0, 4) or csr not in C.VECTOR_CSRS:
        return _bad(w, "", "not a vector instruction")
    name = {1: "csrrw", 2: "csrrs", 3: "csrrc", 5: "csrrwi", 6: "csrrsi", 7: "csrrci"}[f3]
    return Insn(w, name, C.run_csr, csr=csr, ops=("rd", "csr", "rs1" if f3 < 4 else "uimm"),
                kind="csr")
