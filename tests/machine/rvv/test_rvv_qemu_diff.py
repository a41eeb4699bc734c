"""Differential tests against QEMU (qemu-riscv64 7.2, VLEN=256): the same vector code runs
under QEMU and under emukern's unit, and all 32 vector registers, vl, vtype and a0..a7 must
match.  QEMU 7.2 leaves tail and masked-off elements undisturbed by default (its
rvv_ta_all_1s option is off), the same policy as emukern, so no position is excused.
Skipped when llvm-mc, ld.lld or qemu-riscv64 is missing."""
from __future__ import annotations

import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from rvv_helpers import Mem, Regs

from emukern.machine.rvv import RVVUnit

VLEN = 256
VLENB = VLEN // 8
TOOLS = [shutil.which(t) for t in ("llvm-mc", "ld.lld", "qemu-riscv64")]
pytestmark = pytest.mark.skipif(not all(TOOLS), reason="needs llvm-mc, ld.lld, qemu-riscv64")

XINIT = {10: 3, 11: 0xFFFF_FFFF_FFFF_FF85, 12: 0, 13: 0x8000_0000_0000_0000, 14: 17,
         15: 0x1234_5678_9ABC_DEF0, 16: 1, 17: 40}

CASES = {
    "add_sub_e8": """vsetvli t0, a4, e8, m1, tu, mu
        vadd.vv v1, v2, v3
        vsub.vx v4, v5, a1, v0.t
        vrsub.vi v6, v7, -3
        vand.vx v9, v10, a5
        vor.vi v11, v12, 9, v0.t
        vxor.vv v13, v14, v15""",
    "muldiv_e16m2": """vsetvli t0, a7, e16, m2, ta, ma
        vmul.vv v2, v4, v6
        vmulh.vv v8, v10, v12, v0.t
        vmulhu.vx v14, v16, a1
        vmulhsu.vv v18, v20, v22
        vdiv.vv v24, v26, v28
        vdivu.vx v30, v26, zero
        vsetvli t0, a7, e16, m1, ta, ma
        vrem.vx v1, v3, a3
        vremu.vv v5, v7, v9, v0.t
        vdiv.vx v11, v13, a1""",
    "shift_minmax_e32mf2": """vsetvli t0, a0, e32, mf2, tu, mu
        vsll.vv v1, v2, v3
        vsrl.vx v4, v5, a7
        vsra.vi v6, v7, 31
        vmin.vv v8, v9, v10
        vminu.vx v11, v12, a1, v0.t
        vmax.vv v13, v14, v15
        vmaxu.vv v16, v17, v18""",
    "compare_e64m8": """vsetvli t0, a4, e64, m8, tu, mu
        vmslt.vx v1, v8, a1
        vmsgtu.vi v2, v16, 5
        vmsle.vv v3, v8, v16, v0.t
        vmseq.vv v4, v8, v8
        vmsne.vx v5, v24, a3
        vmsleu.vv v6, v16, v24
        vmsgt.vx v7, v16, a5, v0.t""",
    "merge_move_e8m4": """vsetvli t0, a7, e8, m4, ta, mu
        vmerge.vvm v4, v8, v12, v0
        vmerge.vxm v16, v20, a1, v0
        vmerge.vim v24, v28, -7, v0
        vsetvli t0, a4, e8, m2, tu, mu
        vmv.v.v v2, v6
        vmv.v.x v10, a5
        vmv.v.i v14, 12
        vid.v v18, v0.t""",
    "slides_e32m2": """vsetvli t0, a4, e32, m2, tu, mu
        vslideup.vx v4, v8, a0
        vslidedown.vi v12, v8, 5, v0.t
        vslide1up.vx v16, v8, a1
        vslide1down.vx v20, v8, a1, v0.t
        vslidedown.vx v24, v8, a7
        vslideup.vi v28, v8, 1, v0.t""",
    "reductions": """vsetvli t0, a4, e16, m1, tu, mu
        vredsum.vs v1, v2, v3
        vredmax.vs v4, v5, v6, v0.t
        vredminu.vs v7, v8, v9
        vsetvli t0, zero, e64, m4, ta, ma
        vredmin.vs v10, v12, v11
        vredmaxu.vs v13, v16, v14, v0.t
        vredand.vs v15, v20, v17
        vredor.vs v18, v24, v19
        vredxor.vs v21, v28, v22""",
    "mask_ops": """vsetvli t0, a7, e8, m2, tu, mu
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
        vfirst.m a3, v28, v0.t""",
    "scalar_moves": """vsetvli t0, zero, e32, m1, ta, ma
        vmv.x.s a0, v3
        vmv.s.x v4, a5
        vsetvli t0, zero, e64, m1, ta, ma
        vmv.x.s a1, v5
        vsetvli t0, zero, e8, m1, ta, ma
        vmv.x.s a2, v6
        vmv1r.v v7, v8
        vmv2r.v v10, v12
        vmv8r.v v16, v24""",
    "vsetvl_rules": """vsetvli a0, a7, e32, m2, ta, ma
        vsetvli zero, zero, e16, m1, ta, ma
        csrr a1, vl
        vsetivli a2, 9, e8, mf2, tu, mu
        vsetvl a3, a4, a5
        csrr a4, vtype
        vsetvli a5, zero, e64, mf2, ta, ma
        csrr a6, vtype
        vsetvli a7, a1, e16, m4, ta, ma""",
}


def _asm_words(lines: str) -> list[int]:
    out = subprocess.run([TOOLS[0], "-triple=riscv64", "-mattr=+v", "-show-encoding"],
                         input=lines, capture_output=True, text=True, check=True)
    words = []
    for m in re.finditer(r"# encoding: \[(.*?)\]", out.stdout):
        words.append(int.from_bytes(bytes(int(t, 16) for t in m.group(1).split(",")), "little"))
    return words


def _program(body: str, vin: bytes) -> str:
    lines = [".globl _start", "_start:", "  la s0, vin"]
    for g in range(4):
        lines += [f"  vl8re8.v v{8 * g}, (s0)", "  addi s0, s0, 256"]
    lines += [f"  li x{r}, {v}" for r, v in XINIT.items()]
    lines += ["  " + ln.strip() for ln in body.splitlines()]
    lines += ["  la s1, out", "  mv s0, s1"]
    for g in range(4):
        lines += [f"  vs8r.v v{8 * g}, (s0)", "  addi s0, s0, 256"]
    lines += ["  csrr t0, vl", "  sd t0, 0(s0)", "  csrr t0, vtype", "  sd t0, 8(s0)"]
    lines += [f"  sd x{r}, {16 + 8 * (r - 10)}(s0)" for r in range(10, 18)]
    lines += ["  li a0, 1", "  mv a1, s1", f"  li a2, {32 * VLENB + 80}", "  li a7, 64",
              "  ecall", "  li a0, 0", "  li a7, 93", "  ecall", ".data", "vin:"]
    lines += [f"  .byte {', '.join(str(b) for b in vin[i:i + 32])}" for i in range(0, len(vin), 32)]
    lines += ["out:", f"  .space {32 * VLENB + 80}"]
    return "\n".join(lines) + "\n"


def _run_qemu(src: str, tmp: Path) -> bytes:
    (tmp / "t.s").write_text(src)
    subprocess.run([TOOLS[0], "-triple=riscv64", "-mattr=+v", "-filetype=obj", str(tmp / "t.s"),
                    "-o", str(tmp / "t.o")], check=True, capture_output=True)
    subprocess.run([TOOLS[1], str(tmp / "t.o"), "-o", str(tmp / "t")], check=True,
                   capture_output=True)
    out = subprocess.run([TOOLS[2], "-cpu", f"rv64,v=true,vlen={VLEN},elen=64,vext_spec=v1.0",
                          str(tmp / "t")], capture_output=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize("case", sorted(CASES))
def test_against_qemu(case: str, tmp_path: Path) -> None:
    rng = random.Random(case)
    pool = [0, 1, 0xFF, 0x80, 0x7F]
    vin = bytes(rng.choice(pool) if rng.random() < 0.2 else rng.getrandbits(8)
                for _ in range(32 * VLENB))
    q = _run_qemu(_program(CASES[case], vin), tmp_path)
    u = RVVUnit(vlen=VLEN)
    x = Regs()
    mem = Mem()
    u.v[:] = vin
    for r, v in XINIT.items():
        x.write(r, v)
    for w in _asm_words(CASES[case]):
        u.execute(w, x, mem)
    regs = q[:32 * VLENB]
    for i in range(32):
        assert u.read_vreg(i) == regs[i * VLENB:(i + 1) * VLENB], f"v{i}"
    tail = q[32 * VLENB:]
    words = [int.from_bytes(tail[i:i + 8], "little") for i in range(0, len(tail), 8)]
    assert (u.vl, u.vtype) == (words[0], words[1])
    assert [x.read(r) for r in range(10, 18)] == words[2:10]
