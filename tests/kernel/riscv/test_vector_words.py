"""The kernel instruction words in emukern/kernel/arch/riscv/vector.py equal llvm-mc's encodings of the
sequences Linux's inline asm uses (__vstate_csr_save/__riscv_v_vstate_save/_restore,
__vstate_csr_restore, __riscv_v_vstate_discard)."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from emukern.kernel.arch.riscv import vector as V

LLVM_MC = shutil.which("llvm-mc")
pytestmark = pytest.mark.skipif(LLVM_MC is None, reason="llvm-mc not installed")

WORDS = {
    "W_CSRR_T0_VSTART": "csrr t0, vstart",
    "W_CSRR_T1_VTYPE": "csrr t1, vtype",
    "W_CSRR_T2_VL": "csrr t2, vl",
    "W_CSRR_T3_VCSR": "csrr t3, vcsr",
    "W_VSETVLI_T4_X0_E8M8": "vsetvli t4, x0, e8, m8, ta, ma",
    "W_VSE8_V0_A0": "vse8.v v0, (a0)",
    "W_VSE8_V8_A1": "vse8.v v8, (a1)",
    "W_VSE8_V16_A2": "vse8.v v16, (a2)",
    "W_VSE8_V24_A3": "vse8.v v24, (a3)",
    "W_VLE8_V0_A0": "vle8.v v0, (a0)",
    "W_VLE8_V8_A1": "vle8.v v8, (a1)",
    "W_VLE8_V16_A2": "vle8.v v16, (a2)",
    "W_VLE8_V24_A3": "vle8.v v24, (a3)",
    "W_VSETVL_X0_T2_T1": "vsetvl x0, t2, t1",
    "W_CSRW_VSTART_T0": "csrw vstart, t0",
    "W_CSRW_VCSR_T3": "csrw vcsr, t3",
    "W_VSETVL_T0_X0_T1": "vsetvl t0, x0, t1",
}
ONES = ["vmv.v.i v0, -1", "vmv.v.i v8, -1", "vmv.v.i v16, -1", "vmv.v.i v24, -1"]


def encode(lines: list[str]) -> list[int]:
    r = subprocess.run([LLVM_MC, "-triple=riscv64", "-mattr=+v", "-show-encoding"],
                       input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
    out = []
    for m in re.finditer(r"encoding: \[([^\]]*)\]", r.stdout):
        b = bytes(int(x, 16) for x in m.group(1).split(","))
        out.append(int.from_bytes(b, "little"))
    assert len(out) == len(lines), r.stdout + r.stderr
    return out


def test_single_words_match_llvm_mc():
    names = list(WORDS)
    got = encode([WORDS[n] for n in names])
    for n, w in zip(names, got):
        assert getattr(V, n) == w, f"{n}: vector.py {getattr(V, n):#010x} != llvm-mc {w:#010x} ({WORDS[n]})"


def test_vmv_ones_match_llvm_mc():
    assert tuple(encode(ONES)) == V.W_VMV_V_I_ONES


def test_sequences_are_the_linux_ones():
    # __riscv_v_vstate_save: __vstate_csr_save (vstart, vtype, vl, vcsr), vsetvli e8 m8, 4 x vse8
    assert encode(["csrr t0, vstart", "csrr t1, vtype", "csrr t2, vl", "csrr t3, vcsr",
                   "vsetvli t4, x0, e8, m8, ta, ma", "vse8.v v0, (a0)", "vse8.v v8, (a1)",
                   "vse8.v v16, (a2)", "vse8.v v24, (a3)"]) == list(V.SAVE_SEQ)
    # __riscv_v_vstate_restore: vsetvli e8 m8, 4 x vle8, then __vstate_csr_restore
    assert encode(["vsetvli t4, x0, e8, m8, ta, ma", "vle8.v v0, (a0)", "vle8.v v8, (a1)",
                   "vle8.v v16, (a2)", "vle8.v v24, (a3)", "vsetvl x0, t2, t1",
                   "csrw vstart, t0", "csrw vcsr, t3"]) == list(V.RESTORE_SEQ)
    # __riscv_v_vstate_discard: vsetvli e8 m8, 4 x vmv.v.i -1, vsetvl with vill
    assert encode(["vsetvli t4, x0, e8, m8, ta, ma", *ONES, "vsetvl t0, x0, t1"]) == list(V.DISCARD_SEQ)
