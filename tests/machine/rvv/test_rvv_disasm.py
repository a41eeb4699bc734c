"""disasm() must print what llvm-mc prints for the same instruction."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from emukern.machine.rvv import disasm, is_vector_insn

ASM = """
vsetvli t0, a0, e32, m1, ta, ma
vsetvli zero, zero, e8, mf8, tu, mu
vsetvli a5, zero, e64, m8, ta, mu
vsetivli t1, 17, e16, mf2, tu, ma
vsetvl a0, a1, a2
vadd.vv v8, v16, v24, v0.t
vadd.vx v1, v2, a7
vadd.vi v1, v2, -16
vsub.vv v4, v4, v8
vrsub.vx v8, v8, zero
vrsub.vi v8, v8, 15
vand.vi v3, v4, 7
vor.vx v3, v4, s11
vxor.vi v8, v8, -1
vsll.vi v8, v8, 31
vsrl.vx v8, v8, t6
vsra.vv v8, v8, v9, v0.t
vmul.vv v1, v2, v3
vmulh.vx v1, v2, a0
vmulhu.vv v1, v2, v3
vmulhsu.vx v1, v2, a0
vdiv.vv v1, v2, v3
vdivu.vx v1, v2, a0
vrem.vv v1, v2, v3, v0.t
vremu.vx v1, v2, a0
vmin.vv v1, v2, v3
vminu.vx v1, v2, a0
vmax.vv v1, v2, v3
vmaxu.vx v1, v2, a0
vmseq.vi v0, v8, 5
vmsne.vx v1, v8, a0, v0.t
vmsltu.vv v0, v8, v16
vmslt.vx v0, v8, a0
vmsleu.vi v0, v8, -1
vmsle.vv v0, v8, v16
vmsgtu.vx v0, v8, a0
vmsgt.vi v0, v8, 3
vmerge.vvm v8, v16, v24, v0
vmerge.vxm v8, v16, a0, v0
vmerge.vim v8, v8, 3, v0
vmv.v.v v8, v16
vmv.v.x v8, a0
vmv.v.i v8, -16
vmv.x.s a0, v8
vmv.s.x v8, a0
vid.v v8, v0.t
vredsum.vs v8, v16, v24
vredmax.vs v8, v16, v24, v0.t
vredmaxu.vs v8, v16, v24
vredmin.vs v8, v16, v24
vredminu.vs v8, v16, v24
vredand.vs v8, v16, v24
vredor.vs v8, v16, v24
vredxor.vs v8, v16, v24
vcpop.m a0, v8
vfirst.m a0, v8, v0.t
vmand.mm v1, v2, v3
vmnand.mm v1, v2, v3
vmandn.mm v1, v2, v3
vmor.mm v1, v2, v3
vmnor.mm v1, v2, v3
vmorn.mm v1, v2, v3
vmxor.mm v1, v2, v3
vmxnor.mm v1, v2, v3
vmmv.m v1, v2
vmclr.m v1
vmset.m v1
vmnot.m v1, v2
vslideup.vx v8, v16, a0
vslideup.vi v8, v16, 31
vslidedown.vx v8, v16, a0, v0.t
vslidedown.vi v8, v16, 3
vslide1up.vx v8, v16, a0
vslide1down.vx v8, v16, a0
vmv1r.v v1, v2
vmv8r.v v8, v16
vle8.v v8, (a0)
vle16.v v8, (a0), v0.t
vle32.v v8, (sp)
vle64.v v8, (a0)
vle32ff.v v8, (a0)
vse8.v v8, (a0)
vse64.v v8, (a0), v0.t
vlse32.v v8, (a0), a1
vsse16.v v8, (a0), t0, v0.t
vlm.v v0, (a0)
vsm.v v0, (a0)
vl1re8.v v8, (a0)
vl2re16.v v8, (a0)
vl4re32.v v8, (a0)
vl8re64.v v8, (a0)
vs1r.v v8, (a0)
vs8r.v v8, (a0)
csrr a0, vl
csrr a0, vtype
csrr a0, vlenb
csrrw a0, vxrm, a1
csrwi vxrm, 2
csrs vcsr, a0
csrc vxsat, a0
csrrs a0, vstart, a1
csrrci a0, vstart, 3
csrw vstart, zero
vfadd.vv v1, v2, v3
vwadd.vv v8, v2, v4
vluxei32.v v8, (a0), v4
"""


def _llvm() -> list[tuple[int, str]]:
    exe = shutil.which("llvm-mc")
    if exe is None:
        pytest.skip("llvm-mc not installed")
    out = subprocess.run([exe, "-triple=riscv64", "-mattr=+v", "-show-encoding"], input=ASM,
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        pytest.fail(f"llvm-mc is installed but failed: {out.stderr[:400]}")
    pairs = []
    for line in out.stdout.splitlines():
        m = re.match(r"\s+(\S+)\s*(.*?)\s*# encoding: \[(.*)\]", line)
        if m:
            b = bytes(int(t, 16) for t in m.group(3).split(","))
            text = f"{m.group(1)} {m.group(2)}".strip()
            pairs.append((int.from_bytes(b, "little"), re.sub(r"\s+", " ", text)))
    return pairs


def test_disasm_matches_llvm() -> None:
    pairs = _llvm()
    assert len(pairs) == len([s for s in ASM.splitlines() if s.strip()])
    bad = [(f"{w:#010x}", want, disasm(w)) for w, want in pairs if disasm(w) != want]
    assert not bad


def test_not_vector() -> None:
    for w in (0x00000013, 0x0005A507, 0x30002573, 0x0005B507):
        assert not is_vector_insn(w)
        assert disasm(w) is None
