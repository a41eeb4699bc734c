"""The matrix-multiply and BFloat16 functions against QEMU 7.2 (``qemu-aarch64 -cpu max``,
which implements FEAT_I8MM, F32MM, F64MM and BF16 without EBF16): random operands, FPCR
settings (DN, FZ, every rounding mode) and governing predicates go through one batch guest per
vector length; Zd and FPSR after each instruction must be byte-identical to what the unit's
function computes from the same inputs.  Skipped when qemu-aarch64, llvm-mc or ld.lld is missing.
"""
from __future__ import annotations

import random
import shutil
from collections import Counter
from pathlib import Path

import pytest
from conftest_matmul import (VARIANTS, Case, Variant, build_guest, qemu_available, rand_case,
                             run_qemu)

from emukern.machine.sve2.matmul import INSNS
from emukern.machine.sve2.state import Sve2Insn, Sve2Undefined, SveRegs

pytestmark = [
    pytest.mark.qemu,
    pytest.mark.skipif(not (qemu_available() and shutil.which("llvm-mc")
                            and shutil.which("ld.lld")),
                       reason="needs qemu-aarch64, llvm-mc and ld.lld"),
]

#: random cases per variant per vector length (indexed forms have several variants each)
CASES_PER_VARIANT = 120
CASES_PER_INDEXED_VARIANT = 40
VLS = (16, 32, 48, 64, 256)  # bytes: VL 128, 256, 384 (not a power of two), 512, 2048 (the
#                               architectural maximum, with a quarter of the cases)


@pytest.fixture(scope="module")
def guest(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[int]]:
    return build_guest(tmp_path_factory.mktemp("matmul"), VARIANTS)


def _insn_for(word: int) -> Sve2Insn:
    hits = [i for i in INSNS if word & i.mask == i.value]
    assert len(hits) == 1, f"{word:#010x} matches {[h.name for h in hits]}"
    return hits[0]


def emulate(v: Variant, word: int, c: Case, vl: int) -> tuple[bytes, int]:
    regs = SveRegs.zeroed(vl)
    # The same load order as the guest, so aliased registers end up with the same contents.
    regs.z[v.d] = bytearray(c.zd)
    regs.z[v.n] = bytearray(c.zn)
    regs.z[v.m] = bytearray(c.zm)
    regs.p[v.pg] = c.pg
    regs.fpcr = c.fpcr
    _insn_for(word).fn(word, regs)
    return bytes(regs.z[v.d]), regs.fpsr


def runnable(v: Variant, vl: int) -> bool:
    # FMMLA .D works on 256-bit segments: UNDEFINED at VL 128 (tested separately).
    return not (v.text.startswith("fmmla") and ".d" in v.text and vl < 32)


def make_cases(vl: int) -> list[Case]:
    rng = random.Random(0x5EED0000 + vl)
    cases = []
    for vi, v in enumerate(VARIANTS):
        if not runnable(v, vl):
            continue
        count = CASES_PER_INDEXED_VARIANT if "[" in v.text else CASES_PER_VARIANT
        if vl > 64:
            count //= 4
        cases += [rand_case(rng, vi, v, vl) for _ in range(count)]
    return cases


def compare(elf: Path, words: list[int], vl: int) -> tuple[Counter[str], list[str]]:
    """Run one VL's batch under QEMU and through the functions: (cases per mnemonic, the
    differing cases described)."""
    cases = make_cases(vl)
    want = run_qemu(elf, vl, cases)
    bad: list[str] = []
    per: Counter[str] = Counter()
    for c, (qz, qfpsr) in zip(cases, want):
        v = VARIANTS[c.variant]
        per[v.mnemonic] += 1
        gz, gfpsr = emulate(v, words[c.variant], c, vl)
        whole = vl // 32 * 32
        if v.text.startswith("fmmla") and ".d" in v.text and whole != vl:
            # FMMLA .D at VL 384: the Arm ARM's result starts as Zeros(VL), so the part past the
            # last whole 256-bit segment is zero; QEMU 7.2 leaves it unchanged instead.
            assert gz[whole:] == bytes(vl - whole)
            gz, qz = gz[:whole], qz[:whole]
        if (gz, gfpsr) != (qz, qfpsr):
            bad.append(f"{v.text} fpcr={c.fpcr:#x}: fpsr qemu {qfpsr:#x} ours {gfpsr:#x}; "
                       f"zd qemu {qz.hex()} ours {gz.hex()}; zd0 {c.zd.hex()} zn {c.zn.hex()} "
                       f"zm {c.zm.hex()} pg {c.pg:#x}")
    return per, bad


@pytest.mark.parametrize("vl", VLS, ids=[f"vl{8 * v}" for v in VLS])
def test_matches_qemu(guest: tuple[Path, list[int]], vl: int) -> None:
    per, bad = compare(*guest, vl)
    cases = sum(per.values())
    assert not bad, f"{len(bad)} of {len(cases)} differ:\n" + "\n".join(bad[:8])
    assert set(per) == {v.mnemonic for v in VARIANTS if runnable(v, vl)}


def test_fmmla_d_vl128_is_undefined(guest: tuple[Path, list[int]]) -> None:
    """At VL 128 the .D form has no whole 256-bit segment: the Arm ARM's FMMLA decode makes it
    UNDEFINED (``if VL < esize * 4``), so the function raises Sve2Undefined.  QEMU 7.2 is not
    the oracle here: it executes zero segments and leaves Zda unchanged instead of SIGILL."""
    elf, words = guest
    vi = next(i for i, v in enumerate(VARIANTS) if v.text.startswith("fmmla z12.d"))
    c = rand_case(random.Random(1), vi, VARIANTS[vi], 16)
    with pytest.raises(Sve2Undefined):
        emulate(VARIANTS[vi], words[vi], c, 16)
