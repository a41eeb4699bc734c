"""Disassembly in the syntax llvm-mc prints (including its aliases such as vmmv.m/vl1r.v),
plus :func:`is_vector_insn`, the cheap test the CPU uses before handing a word over."""
from __future__ import annotations

from functools import lru_cache

from .decode import decode
from .exec_cfg import VECTOR_CSRS
from .vtype import vtype_text

XNAMES = ("zero ra sp gp tp t0 t1 t2 s0 s1 a0 a1 a2 a3 a4 a5 a6 a7 s2 s3 s4 s5 s6 s7 s8 s9 "
          "s10 s11 t3 t4 t5 t6").split()
FNAMES = ("ft0 ft1 ft2 ft3 ft4 ft5 ft6 ft7 fs0 fs1 fa0 fa1 fa2 fa3 fa4 fa5 fa6 fa7 fs2 fs3 fs4 "
          "fs5 fs6 fs7 fs8 fs9 fs10 fs11 ft8 ft9 ft10 ft11").split()


def is_vector_insn(word: int) -> bool:
    """True for any word in the vector encoding space (see module docs of the package)."""
    op = word & 0x7F
    if op == 0x57:
        return True
    if op == 0x07 or op == 0x27:
        return ((word >> 12) & 7) in (0, 5, 6, 7)
    if op == 0x73:
        return ((word >> 12) & 7) not in (0, 4) and (word >> 20) & 0xFFF in VECTOR_CSRS
    return False


@lru_cache(maxsize=4096)
def disasm(word: int) -> str | None:
    """llvm-style text for a vector word, or None if the word is not a vector instruction.
    Reserved encodings come out as ``.4byte 0x...`` (llvm's ``<unknown>``)."""
    word &= 0xFFFFFFFF
    if not is_vector_insn(word):
        return None
    d = decode(word)
    if not d.name:
        return f".4byte {word:#010x}"
    vd, vs1, vs2 = d.vd, d.vs1, d.vs2
    name = d.name
    # llvm's preferred aliases
    if name == "vmand.mm" and vs1 == vs2:
        return f"vmmv.m v{vd}, v{vs2}"
    if name == "vmnand.mm" and vs1 == vs2:
        return f"vmnot.m v{vd}, v{vs2}"
    if name == "vmxor.mm" and vs1 == vs2 == vd:
        return f"vmclr.m v{vd}"
    if name == "vmxnor.mm" and vs1 == vs2 == vd:
        return f"vmset.m v{vd}"
    if name.startswith("vl") and name.endswith("re8.v"):
        name = name.replace("re8.v", "r.v")
    if name.startswith("csr"):
        return _csr_text(d.word, name)
    parts: list[str] = []
    for o in d.ops:
        if o == "vd":
            parts.append(f"v{vd}")
        elif o == "vs2":
            parts.append(f"v{vs2}")
        elif o == "vs1":
            parts.append(f"v{vs1}")
        elif o == "rd":
            parts.append(XNAMES[d.rd])
        elif o == "rs1":
            parts.append(XNAMES[d.rs1])
        elif o == "rs2":
            parts.append(XNAMES[d.rs2])
        elif o == "fs1":
            parts.append(FNAMES[d.rs1])
        elif o == "simm":
            parts.append(str(vs1 - 32 if vs1 & 16 else vs1))
        elif o == "uimm":
            parts.append(str(vs1))
        elif o == "v0":
            parts.append("v0")
        elif o == "mem":
            parts.append(f"({XNAMES[d.rs1]})")
        elif o == "vtypei":
            bits = 11 if name == "vsetvli" else 10
            parts.append(vtype_text((word >> 20) & ((1 << bits) - 1)))
        elif o == "mask":
            if not d.vm:
                parts.append("v0.t")
    return f"{name} {', '.join(parts)}" if parts else name


def _csr_text(word: int, name: str) -> str:
    rd = (word >> 7) & 31
    src = (word >> 15) & 31
    csr = VECTOR_CSRS[word >> 20]
    imm = name.endswith("i")
    srctxt = str(src) if imm else XNAMES[src]
    if name == "csrrs" and src == 0:
        return f"csrr {XNAMES[rd]}, {csr}"
    if rd == 0:
        return f"{name[:3]}{name[4:]} {csr}, {srctxt}"   # csrrw -> csrw, csrrsi -> csrsi
    return f"{name} {XNAMES[rd]}, {csr}, {srctxt}"
