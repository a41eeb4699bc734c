"""Whole-program differential tests against qemu-riscv64: static ELF guests that exercise every
vector instruction emukern's RVV unit implements (see ``emukern/machine/rvv/decode.py``) run
under emukern (through Unicorn's illegal-instruction trap path and the kernel's first-use trap)
and under ``qemu-riscv64 -cpu rv64,v=true,vlen=N,vext_spec=v1.0``, at VLEN 128, 256 and 512.

Each program loads all 32 vector registers from a random image, zeroes/sets the scalar
registers, runs its body, stores every scalar register, vl/vtype/vstart/vxrm/vxsat/vcsr/vlenb
and all 32 vector registers (``vs8r.v`` x4) to memory *before* any system call, then writes that
block and its 8 KiB data area (the target of the stores) with ``write(1, ...)``.  Both runs must
print identical bytes: QEMU 7.2 leaves tail and masked-off elements undisturbed by default, as
emukern's unit does, so no position is excused.

The guest programs of ``guest_asm/riscv/vec_*.S`` are compared the same way (exit status and
stdout).  Everything here skips when qemu-riscv64 (or llvm-mc/ld.lld) is missing.

Where QEMU 7.2 and emukern legitimately differ, the bodies stay clear of it:

* initial vtype: qemu-user starts with vtype = vill; emukern's kernel, like Linux, restores a
  zeroed context after the first-use trap (vtype = 0, i.e. e8/m1, vl = 0).  The harness
  therefore sets vill itself before each body.
* vxrm: QEMU 7.2 stores a write to vxrm unmasked (csrs vxrm with 7 reads back 7); the spec
  says the upper bits "should be written as zeros", and emukern keeps only vxrm[1:0].
* vstart >= vl: QEMU 7.2 skips such an instruction *without* resetting vstart (a later
  whole-register store then starts at that vstart); the spec resets vstart after every
  vector instruction, as emukern does.  Bodies only use vstart < vl.
"""
from __future__ import annotations

import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from emukern.api import Machine
from emukern.errors import AssemblerError
from emukern.loader.asm import assemble, find_tools

QEMU = shutil.which("qemu-riscv64")


def _have_llvm() -> bool:
    try:
        find_tools()
    except AssemblerError:
        return False
    return True


HAVE_LLVM = _have_llvm()
pytestmark = [
    pytest.mark.qemu,
    pytest.mark.skipif(QEMU is None, reason="qemu-riscv64 is not installed (apt-get install "
                                            "qemu-user): no reference to compare against"),
    pytest.mark.skipif(not HAVE_LLVM, reason="llvm-mc and ld.lld are needed to build the guests"),
]

GUEST_DIR = Path(__file__).resolve().parents[3] / "guest_asm" / "riscv"
VLENS = (128, 256, 512)
MEMSZ = 8192
# registers the harness owns: sp, gp, tp, s0 (vin/out cursor), s1 (= mem, readable), s2 (out)
HARNESS = {2, 3, 4, 8, 18}
XINIT = {10: 3, 11: 0xFFFF_FFFF_FFFF_FF85, 12: 0, 13: 0x8000_0000_0000_0000, 14: 17,
         15: 0x1234_5678_9ABC_DEF0, 16: 1, 17: 40, 28: 0xFFFF_FFFF_FFFF_FFFF, 29: 7,
         30: 0x7FFF_FFFF_FFFF_FFFF, 31: 0x8000_0000}
CSR_DUMP = ("vl", "vtype", "vstart", "vxrm", "vxsat", "vcsr", "vlenb")

# ---------------------------------------------------------------------------------------------
# Bodies.  Conventions: s1 = 8 KiB data area (random bytes, 8-byte aligned, page aligned),
# a0..a7/t0..t6/s3..s11 free.  Register groups and overlaps must be legal (no SIGILL).
CASES: dict[str, str] = {
    "opi_vv": """
        vsetvli t0, a7, e8, m1, tu, mu
        vadd.vv v1, v2, v3
        vsub.vv v4, v5, v6, v0.t
        vminu.vv v7, v8, v9
        vmin.vv v10, v11, v12, v0.t
        vmaxu.vv v13, v14, v15
        vmax.vv v16, v17, v18
        vand.vv v19, v20, v21, v0.t
        vor.vv v22, v23, v24
        vxor.vv v25, v26, v27
        vsll.vv v28, v29, v30, v0.t
        vsetvli t1, a4, e16, m2, tu, mu
        vsrl.vv v2, v4, v6
        vsra.vv v8, v10, v12, v0.t
        vadd.vv v14, v16, v18, v0.t
        vsetvli t2, zero, e64, m4, ta, ma
        vsll.vv v20, v24, v28
        vsra.vv v24, v28, v4
        vmin.vv v28, v4, v8, v0.t""",
    "opi_vx": """
        vsetvli t0, a4, e16, m2, tu, mu
        vadd.vx v2, v4, a1
        vsub.vx v6, v8, a5, v0.t
        vrsub.vx v10, v12, a3
        vminu.vx v14, v16, a1, v0.t
        vmin.vx v18, v20, a1
        vmaxu.vx v22, v24, a5
        vmax.vx v26, v28, t6, v0.t
        vsetvli t1, a7, e32, m1, tu, mu
        vand.vx v1, v2, a5
        vor.vx v3, v4, a1, v0.t
        vxor.vx v5, v6, t5
        vsll.vx v7, v8, a7
        vsrl.vx v9, v10, t4, v0.t
        vsra.vx v11, v12, a1
        vsetvli t2, a0, e64, m8, tu, mu
        vadd.vx v16, v24, t5, v0.t
        vsra.vx v8, v16, t4""",
    "opi_vi": """
        vsetvli t0, a7, e32, m4, tu, mu
        vadd.vi v4, v8, -16
        vrsub.vi v12, v16, 15, v0.t
        vand.vi v20, v24, -3
        vor.vi v28, v4, 9, v0.t
        vxor.vi v8, v12, -1
        vsll.vi v16, v20, 31
        vsrl.vi v24, v28, 17, v0.t
        vsra.vi v4, v8, 1
        vsetvli t1, a4, e8, mf2, tu, mu
        vadd.vi v1, v2, 7, v0.t
        vsll.vi v3, v4, 7
        vsra.vi v5, v6, 3, v0.t
        vsetvli t2, a0, e16, mf4, tu, mu
        vsrl.vi v7, v9, 15
        vxor.vi v10, v11, 5, v0.t""",
    "compares": """
        vsetvli t0, a7, e8, m1, tu, mu
        vmseq.vv v1, v2, v3
        vmseq.vx v4, v5, a1, v0.t
        vmseq.vi v6, v7, -1
        vmsne.vv v8, v9, v10, v0.t
        vmsne.vx v11, v12, a5
        vmsne.vi v13, v14, 0
        vmsltu.vv v15, v16, v17
        vmsltu.vx v18, v19, a1, v0.t
        vmslt.vv v20, v21, v22
        vmslt.vx v23, v24, t6
        vmsleu.vv v25, v26, v27, v0.t
        vmsleu.vx v28, v29, a1
        vmsleu.vi v30, v31, 5
        vsetvli t1, a4, e32, m2, tu, mu
        vmsle.vv v1, v2, v4
        vmsle.vx v3, v6, a3, v0.t
        vmsle.vi v5, v8, -9
        vmsgtu.vx v7, v10, a1
        vmsgtu.vi v9, v12, 14, v0.t
        vmsgt.vx v11, v14, zero
        vmsgt.vi v13, v16, -2
        vsetvli t2, zero, e64, m8, ta, mu
        vmseq.vv v1, v8, v8
        vmsltu.vv v2, v16, v24, v0.t
        vmsgt.vx v3, v24, a5
        vsetvli t3, a0, e16, mf2, tu, mu
        vmslt.vx v20, v21, a1, v0.t
        vmsleu.vv v22, v23, v24""",
    "muldiv": """
        vsetvli t0, a7, e8, m1, tu, mu
        vmul.vv v1, v2, v3
        vmulh.vv v4, v5, v6, v0.t
        vmulhu.vx v7, v8, a1
        vmulhsu.vv v9, v10, v11
        vdiv.vv v12, v13, v14
        vdivu.vx v15, v16, zero
        vrem.vv v17, v18, v19, v0.t
        vremu.vv v20, v21, v22
        vsetvli t1, a4, e16, m2, ta, mu
        vmul.vx v2, v4, a5, v0.t
        vmulh.vx v6, v8, t6
        vmulhsu.vx v10, v12, a1
        vdiv.vx v14, v16, a1
        vrem.vx v18, v20, zero
        vdivu.vv v22, v24, v26, v0.t
        vremu.vx v28, v30, a7
        vsetvli t2, zero, e32, m1, ta, ma
        vmv.v.x v1, t5
        vmv.v.x v3, t4
        vdiv.vx v5, v1, t0
        li s3, -1
        vdiv.vx v7, v1, s3
        vrem.vx v9, v1, s3
        vmulhu.vv v11, v12, v13
        vsetvli t3, a0, e64, m4, tu, mu
        vmv.v.x v16, a3
        li s4, -1
        vdiv.vx v20, v16, s4
        vrem.vx v24, v16, s4, v0.t
        vmulh.vv v28, v4, v8
        vmulhsu.vv v12, v4, v8
        vmulhu.vx v4, v8, a5
        vremu.vv v8, v12, v16
        vdivu.vx v12, v28, a5""",
    "merge_moves": """
        vsetvli t0, a7, e8, m4, ta, mu
        vmerge.vvm v4, v8, v12, v0
        vmerge.vxm v16, v20, a1, v0
        vmerge.vim v24, v28, -7, v0
        vsetvli t1, a4, e16, m2, tu, mu
        vmv.v.v v2, v6
        vmv.v.x v10, a5
        vmv.v.i v14, 12
        vid.v v18, v0.t
        vid.v v20
        vsetvli t2, a0, e64, m1, tu, mu
        vmerge.vxm v1, v3, a3, v0
        vmv.v.i v5, -16
        vmv1r.v v7, v8
        vmv2r.v v10, v12
        vmv4r.v v20, v24
        vmv8r.v v16, v24""",
    "slides": """
        vsetvli t0, a4, e32, m2, tu, mu
        vslideup.vx v4, v8, a0
        vslidedown.vi v12, v8, 5, v0.t
        vslide1up.vx v16, v8, a1
        vslide1down.vx v20, v8, a1, v0.t
        vslidedown.vx v24, v8, a7
        vslideup.vi v28, v8, 1, v0.t
        vsetvli t1, a7, e8, m1, tu, mu
        vslideup.vx v1, v2, t5
        vslidedown.vx v3, v2, t5
        vslidedown.vx v5, v2, a4, v0.t
        vslideup.vi v6, v7, 31
        vslide1down.vx v9, v10, t4
        vsetvli t2, zero, e64, m8, ta, ma
        vslide1up.vx v8, v16, t6
        vslidedown.vi v24, v16, 3
        vsetvli t3, a0, e16, mf2, tu, mu
        vslide1down.vx v2, v3, a5, v0.t
        vslideup.vi v4, v3, 2""",
    "reductions": """
        vsetvli t0, a4, e16, m1, tu, mu
        vredsum.vs v1, v2, v3
        vredmax.vs v4, v5, v6, v0.t
        vredminu.vs v7, v8, v9
        vsetvli t1, zero, e64, m4, ta, ma
        vredmin.vs v10, v12, v11
        vredmaxu.vs v13, v16, v14, v0.t
        vredand.vs v15, v20, v17
        vredor.vs v18, v24, v19
        vredxor.vs v21, v28, v22
        vsetvli t2, a7, e8, m8, tu, mu
        vredsum.vs v1, v8, v2, v0.t
        vredmaxu.vs v3, v16, v3
        vredand.vs v5, v24, v6, v0.t
        vsetvli t3, a7, e32, mf2, tu, mu
        vredor.vs v7, v9, v10, v0.t
        vredxor.vs v11, v12, v13
        vredmin.vs v14, v15, v14
        vsetivli zero, 0, e32, m1, tu, mu
        vredsum.vs v30, v31, v29""",
    "mask_ops": """
        vsetvli t0, a7, e8, m2, tu, mu
        vmand.mm v1, v2, v3
        vmnand.mm v4, v5, v6
        vmandn.mm v7, v8, v9
        vmor.mm v10, v11, v12
        vmnor.mm v13, v14, v15
        vmorn.mm v16, v17, v18
        vmxor.mm v19, v20, v21
        vmxnor.mm v22, v23, v24
        vcpop.m a0, v25
        vcpop.m a1, v26, v0.t
        vfirst.m a2, v27
        vfirst.m a3, v28, v0.t
        vsetvli t1, zero, e64, m8, ta, ma
        vmxor.mm v29, v29, v29
        vfirst.m a4, v29
        vcpop.m a5, v29
        vmxnor.mm v30, v30, v30
        vcpop.m a6, v30
        vfirst.m s3, v30
        vsetivli t2, 3, e8, mf8, tu, mu
        vmand.mm v31, v1, v4
        vcpop.m s4, v31
        vmseq.vi v5, v6, 0
        vfirst.m s5, v5""",
    "scalar_moves": """
        vsetvli t0, zero, e32, m1, ta, ma
        vmv.x.s a0, v3
        vmv.s.x v4, a5
        vsetvli t1, zero, e64, m1, ta, ma
        vmv.x.s a1, v5
        vmv.s.x v6, a3
        vsetvli t2, zero, e8, m1, ta, ma
        vmv.x.s a2, v6
        vmv.s.x v7, a1
        vsetvli t3, a4, e16, m4, tu, mu
        vmv.x.s a3, v8
        vmv.s.x v12, t4
        vsetivli zero, 0, e16, m1, tu, mu
        vmv.s.x v9, a5
        vmv.x.s a4, v9""",
    "vsetvl_csr": """
        vsetvli a0, a7, e32, m2, ta, ma
        vsetvli zero, zero, e16, m1, ta, ma
        csrr a1, vl
        vsetivli a2, 9, e8, mf2, tu, mu
        vsetvl a3, a4, a5
        csrr a4, vtype
        vsetvli a5, zero, e64, mf2, ta, ma
        csrr a6, vtype
        vsetvli a7, a1, e16, m4, ta, ma
        li s3, 0xd3
        vsetvl s4, t5, s3
        csrr s5, vl
        li s3, 0x104
        vsetvl s6, t5, s3
        csrr s7, vtype
        csrr s8, vl
        vsetvli s9, t4, e64, m8, tu, mu
        vsetivli s10, 31, e8, m1, ta, mu
        vsetvli s11, t5, e8, mf8, ta, ma
        csrr t0, vlenb
        csrwi vxrm, 3
        csrrsi t1, vxsat, 1
        csrrw t2, vcsr, a2
        csrr t3, vcsr
        csrrci zero, vcsr, 4
        csrr ra, vcsr
        csrrwi zero, vxsat, 0
        li s3, 2
        csrrs zero, vxrm, s3
        csrrc zero, vxrm, a0
        csrr s1, vxrm""",
    "vstart": """
        vsetvli t0, a7, e16, m1, tu, mu
        csrwi vstart, 3
        vadd.vv v1, v2, v3
        csrr a0, vstart
        csrwi vstart, 5
        vmseq.vv v4, v5, v6
        li s3, 7
        csrw vstart, s3
        vle16.v v7, (s1)
        csrwi vstart, 2
        vse16.v v8, (s1)
        csrwi vstart, 4
        vor.vx v9, v10, a1, v0.t
        csrwi vstart, 1
        vslidedown.vi v11, v12, 2
        csrwi vstart, 6
        vmand.mm v13, v14, v15
        csrwi vstart, 9
        vsetvli t1, a7, e8, m1, tu, mu
        csrr a1, vstart
        csrwi vstart, 12
        vmv.v.i v16, 5
        csrs vstart, a0
        csrr a2, vstart""",
    "mem_unit": """
        vsetvli t0, a7, e8, m4, tu, mu
        vle8.v v4, (s1)
        addi a0, s1, 1000
        vle8.v v8, (a0), v0.t
        vse8.v v12, (a0)
        vsetvli t1, a4, e16, m2, tu, mu
        addi a1, s1, 2002
        vle16.v v16, (a1)
        vse16.v v18, (a1), v0.t
        vsetvli t2, zero, e32, m8, ta, mu
        addi a2, s1, 3004
        vle32.v v24, (a2), v0.t
        addi a3, s1, 4096
        vse32.v v16, (a3)
        vsetvli t3, a7, e64, m1, tu, mu
        addi a4, s1, 8
        vle64.v v1, (a4)
        addi a5, s1, 7000
        vse64.v v2, (a5), v0.t
        vlm.v v3, (s1)
        addi a6, s1, 7500
        vsm.v v4, (a6)
        vsetvli t4, zero, e8, mf8, ta, ma
        addi a6, s1, 7600
        vsm.v v5, (a6)
        vle8.v v6, (a6)""",
    "mem_whole": """
        addi a0, s1, 64
        vl1re8.v v1, (a0)
        vl2re16.v v2, (s1)
        addi a1, s1, 200
        vl4re32.v v4, (a1)
        addi a2, s1, 1024
        vl8re64.v v24, (a2)
        vl1re64.v v9, (a2)
        vl2re8.v v10, (a1)
        vl4re16.v v12, (a0)
        vl8re32.v v16, (s1)
        addi a3, s1, 4096
        vs1r.v v3, (a3)
        addi a4, s1, 4200
        vs2r.v v6, (a4)
        addi a5, s1, 5000
        vs4r.v v20, (a5)
        addi a6, s1, 6000
        vs8r.v v8, (a6)""",
    "mem_strided": """
        vsetvli t0, a7, e8, m1, tu, mu
        li a0, 3
        vlse8.v v1, (s1), a0
        li a1, -5
        addi a2, s1, 2048
        vlse8.v v2, (a2), a1, v0.t
        vsse8.v v3, (a2), a0
        vsetvli t1, a4, e16, m2, tu, mu
        li a3, 0
        vlse16.v v4, (s1), a3
        li a4, 10
        addi a5, s1, 3000
        vsse16.v v6, (a5), a4, v0.t
        vsetvli t2, zero, e32, m4, ta, mu
        li a6, 12
        vlse32.v v8, (s1), a6, v0.t
        li a7, -8
        addi s3, s1, 7000
        vsse32.v v12, (s3), a7
        vsetvli t3, t4, e64, m8, tu, mu
        li s4, 24
        vlse64.v v16, (s1), s4
        li s5, 16
        addi s6, s1, 4096
        vsse64.v v24, (s6), s5, v0.t""",
    "mem_ff": """
        li a0, 0x40000000
        li a1, 8192
        li a2, 3
        li a3, 0x32
        li a4, -1
        li a5, 0
        li a7, 222
        ecall
        li s3, 0x40000000
        bne a0, s3, 9f
        li a1, 4096
        add a0, s3, a1
        li a7, 215
        ecall
        bnez a0, 9f
        mv a0, s1
        mv a1, s3
        li a2, 4096
        jal ra, 8f
        li s4, 0x40001000
        vsetvli t0, zero, e8, m8, ta, ma
        addi a0, s4, -40
        vle8ff.v v8, (a0)
        csrr s5, vl
        vsetvli t0, zero, e16, m4, tu, mu
        addi a0, s4, -24
        vle16ff.v v16, (a0), v0.t
        csrr s6, vl
        vsetvli t0, zero, e32, m2, tu, mu
        addi a0, s4, -8
        vle32ff.v v2, (a0)
        csrr s7, vl
        vsetvli t0, zero, e64, m1, tu, mu
        addi a0, s4, -8
        vle64ff.v v4, (a0)
        csrr s8, vl
        vsetvli t0, a7, e8, m1, tu, mu
        vle8ff.v v5, (s1)
        csrr s9, vl
        li a0, 0
        li a1, 0
        li a2, 0
        li a3, 0
        li a4, 0
        li a5, 0
        li a7, 0
        li s3, 0
        li s4, 0
        j 7f
    8:  vsetvli t0, a2, e8, m8, ta, ma
        vle8.v v24, (a0)
        vse8.v v24, (a1)
        add a0, a0, t0
        add a1, a1, t0
        sub a2, a2, t0
        bnez a2, 8b
        ret
    9:  li a0, 99
        li a7, 94
        ecall
    7:""",
}


def _coverage_names() -> set[str]:
    """Every mnemonic (vector CSR accesses as 'csr<op>') the bodies above assemble to."""
    names = set()
    for body in CASES.values():
        for ln in body.splitlines():
            m = re.match(r"\s*(?:\d+:\s*)?([a-z0-9.]+)", ln)
            if m:
                names.add(m.group(1))
    return names


_BIG_ADDI = re.compile(r"\s*addi (\w+), (\w+), (\d{4,})\s*$")


def _program(body: str, vlen: int, seed: str) -> str:
    vlenb = vlen // 8
    rng = random.Random(f"{seed}/{vlen}")
    pool = [0, 1, 0xFF, 0x80, 0x7F]
    vin = bytes(rng.choice(pool) if rng.random() < 0.2 else rng.getrandbits(8)
                for _ in range(32 * vlenb))
    mem = bytes(rng.getrandbits(8) for _ in range(MEMSZ))
    out_size = 32 * 8 + 8 * 8 + 32 * vlenb
    lines = [".globl _start", "_start:", "  la s0, vin"]
    for g in range(4):
        lines += [f"  vl8re8.v v{8 * g}, (s0)", f"  addi s0, s0, {8 * vlenb}"]
    # qemu-user starts with vtype = vill; emukern's kernel, like Linux, restores a zeroed context
    # at first use (vtype = 0: e8, m1).  Start every body from the same state: vill, vl = 0.
    lines += ["  li t0, 1", "  slli t0, t0, 63", "  vsetvl zero, zero, t0"]
    lines += [f"  li x{r}, 0" for r in range(1, 32) if r not in HARNESS]
    lines += [f"  li x{r}, {v}" for r, v in XINIT.items()]
    lines += ["  la s1, mem"]
    for ln in body.splitlines():
        m = _BIG_ADDI.match(ln)
        if m:      # addi's immediate is 12 bits: "addi rd, rs, N" with a larger N -> li + add
            lines += [f"  li {m[1]}, {m[3]}", f"  add {m[1]}, {m[1]}, {m[2]}"]
        elif ln.strip():
            lines.append("  " + ln.strip())
    # dump: x registers, vector CSRs, vector registers -- all to memory before any syscall
    lines += ["  la s2, out"]
    lines += [f"  sd x{r}, {8 * r}(s2)" for r in range(1, 32) if r not in HARNESS]
    for i, c in enumerate(CSR_DUMP):
        lines += [f"  csrr t0, {c}", f"  sd t0, {256 + 8 * i}(s2)"]
    lines += ["  addi s0, s2, 320"]
    for g in range(4):
        lines += [f"  vs8r.v v{8 * g}, (s0)", f"  addi s0, s0, {8 * vlenb}"]
    lines += ["  li a0, 1", "  mv a1, s2", f"  li a2, {out_size}", "  li a7, 64", "  ecall",
              "  li a0, 1", "  la a1, mem", f"  li a2, {MEMSZ}", "  li a7, 64", "  ecall",
              "  li a0, 0", "  li a7, 94", "  ecall", ".data", ".balign 4096", "mem:"]
    lines += [f"  .byte {', '.join(str(b) for b in mem[i:i + 32])}" for i in range(0, MEMSZ, 32)]
    lines += [".balign 64", "vin:"]
    lines += [f"  .byte {', '.join(str(b) for b in vin[i:i + 32])}" for i in range(0, len(vin), 32)]
    lines += [".balign 64", "out:", f"  .space {out_size}"]
    return "\n".join(lines) + "\n"


def _qemu(elf: Path, vlen: int, argv: list[str] | None = None) -> subprocess.CompletedProcess:
    assert QEMU is not None
    return subprocess.run([QEMU, "-cpu", f"rv64,v=true,vlen={vlen},elen=64,vext_spec=v1.0",
                           str(elf), *(argv or [])], capture_output=True, timeout=60)


def _describe(a: bytes, b: bytes, vlen: int) -> str:
    """Name the first differing field of a dump (emukern a, qemu b)."""
    vlenb = vlen // 8
    n = min(len(a), len(b))
    i = next((k for k in range(n) if a[k] != b[k]), n)
    if i < 256:
        return f"x{i // 8}"
    if i < 320:
        return CSR_DUMP[(i - 256) // 8]
    if i < 320 + 32 * vlenb:
        r = (i - 320) // vlenb
        return f"v{r} byte {(i - 320) % vlenb}"
    if i < n:
        return f"mem byte {i - 320 - 32 * vlenb}"
    return f"length {len(a)} vs {len(b)}"


@pytest.mark.parametrize("vlen", VLENS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_elf_against_qemu(case: str, vlen: int, tmp_path: Path) -> None:
    src = tmp_path / f"rvv_{case}.S"
    elf = assemble(src, "riscv64", text=_program(CASES[case], vlen, case))
    q = _qemu(elf, vlen)
    assert q.returncode == 0, f"qemu: status {q.returncode} {q.stderr[-500:]!r}"
    r = Machine(vlen=vlen).load(elf).run()
    assert r.exit_status == 0, f"emukern: exit status {r.exit_status}"
    if r.stdout != q.stdout:
        pytest.fail(f"{case} at VLEN={vlen}: first difference in {_describe(r.stdout, q.stdout, vlen)}")


def test_bodies_cover_every_implemented_instruction() -> None:
    """Every mnemonic the unit's decoder implements appears in some body above."""
    from emukern.machine.rvv import decode as D
    want = set()
    for name, forms in list(D._OPI_BIN.values()) + list(D._OPI_CMP.values()):
        for f in forms:
            want.add(f"{name}.{ {'V': 'vv', 'X': 'vx', 'I': 'vi'}[f] }")
    want |= {f"vmerge.{s}" for s in ("vvm", "vxm", "vim")} | {"vmv.v.v", "vmv.v.x", "vmv.v.i"}
    want |= {f"{n}.{s}" for n in ("vslideup", "vslidedown") for s in ("vx", "vi")}
    want |= {"vslide1up.vx", "vslide1down.vx", "vmv.x.s", "vmv.s.x", "vcpop.m", "vfirst.m", "vid.v"}
    want |= {f"vmv{n}r.v" for n in (1, 2, 4, 8)}
    want |= {f"{n}.vs" for n in D._RED.values()} | {f"{n}.mm" for n in D._MASKLOGIC.values()}
    want |= {f"{n}.{s}" for n in D._OPM_BIN.values() for s in ("vv", "vx")}
    want |= {"vsetvli", "vsetivli", "vsetvl", "vlm.v", "vsm.v"}
    for e in (8, 16, 32, 64):
        want |= {f"vle{e}.v", f"vse{e}.v", f"vle{e}ff.v", f"vlse{e}.v", f"vsse{e}.v"}
        want |= {f"vl{n}re{e}.v" for n in (1, 2, 4, 8)}
    want |= {f"vs{n}r.v" for n in (1, 2, 4, 8)}
    want |= {"csrr", "csrw", "csrwi", "csrs", "csrrs", "csrrc", "csrrw", "csrrsi", "csrrci",
             "csrrwi"}
    have = _coverage_names()
    # whole-register loads of other EEWs than the bodies use are the same handler
    missing = sorted(n for n in want - have
                     if not (n.startswith("vl") and "re" in n and n not in
                             {"vl1re8.v", "vl2re16.v", "vl4re32.v", "vl8re64.v"}))
    assert not missing, f"no ELF diff body uses: {missing}"


@pytest.mark.parametrize("vlen", VLENS)
@pytest.mark.parametrize("prog,argv", [
    ("vec_memcpy", ["4099"]), ("vec_strlen", []), ("vec_saxpy", ["333"]), ("vec_reduce", []),
])
def test_guest_programs_against_qemu(prog: str, argv: list[str], vlen: int) -> None:
    elf = assemble(GUEST_DIR / f"{prog}.S", "riscv64")
    q = _qemu(elf, vlen, argv)
    r = Machine(vlen=vlen).load(elf, argv).run()
    assert q.returncode == 0, f"qemu: {prog} status {q.returncode}"
    assert r.exit_status == 0, f"emukern: {prog} status {r.exit_status}"
    assert r.stdout == q.stdout
    assert len(r.stdout) > 0
