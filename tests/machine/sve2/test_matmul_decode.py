"""Decoding of the matrix-multiply / BFloat16 encoding classes (machine/sve2/matmul.py INSNS):
the classes are disjoint, each LLVM-encoded instruction selects exactly its class, unallocated
size/opc fields raise Sve2Undefined, neighbouring SVE/SVE2 encodings select none of them, and
random words inside each class agree with LLVM's disassembler on being that instruction or
unallocated."""
from __future__ import annotations

import random
import re
import shutil
import subprocess

import pytest
from conftest_matmul import MATTR, VARIANTS

from emukern.loader.asm import find_tools
from emukern.machine.sve2.matmul import INSNS
from emukern.machine.sve2.state import Sve2Insn, Sve2Undefined, SveRegs

needs_mc = pytest.mark.skipif(shutil.which("llvm-mc") is None, reason="needs llvm-mc")

#: mnemonic -> (INSNS entry name, feature)
EXPECTED = {
    "smmla": ("SMMLA/USMMLA/UMMLA", "svei8mm"),
    "ummla": ("SMMLA/USMMLA/UMMLA", "svei8mm"),
    "usmmla": ("SMMLA/USMMLA/UMMLA", "svei8mm"),
    "usdot": (None, "svei8mm"),              # vectors or indexed: decided by the operands
    "sudot": ("USDOT/SUDOT (indexed)", "svei8mm"),
    "fmmla": (None, None),
    "bfcvt": ("BFCVT", "svebf16"),
    "bfcvtnt": ("BFCVTNT", "svebf16"),
    "bfdot": (None, "svebf16"),
    "bfmmla": ("BFMMLA", "svebf16"),
    "bfmlalb": (None, "svebf16"),
    "bfmlalt": (None, "svebf16"),
}


def matches(word: int) -> list[Sve2Insn]:
    return [i for i in INSNS if word & i.mask == i.value]


def _encode(lines: list[str]) -> list[int]:
    mc, _ = find_tools()
    out = subprocess.run([mc, "-triple=aarch64", "-mattr=+sve2,+i8mm,+f32mm,+f64mm,+bf16",
                          "-show-encoding"], input="\n".join(lines) + "\n",
                         capture_output=True, text=True, check=True).stdout
    words = [int.from_bytes(bytes(int(b, 16) for b in m.group(1).split(",")), "little")
             for m in re.finditer(r"encoding: \[([^\]]*)\]", out)]
    assert len(words) == len(lines)
    return words


def _disassemble(words: list[int]) -> list[str]:
    """LLVM's reading of each word: its mnemonic, or "" for an invalid encoding."""
    mc, _ = find_tools()
    text = "\n".join(" ".join(f"0x{b:02x}" for b in w.to_bytes(4, "little")) for w in words)
    r = subprocess.run([mc, "--disassemble", "-triple=aarch64", MATTR], input=text + "\n",
                       capture_output=True, text=True)
    # Each input line gives one instruction line on stdout or one "invalid instruction
    # encoding" warning on stderr; both carry the input line number only on stderr, so pair
    # them up by the order in which stdout lines appear for the valid ones.
    bad_lines = {int(m.group(1)) for m in re.finditer(r"<stdin>:(\d+):\d+: warning: invalid",
                                                    r.stderr)}
    good = [ln.split()[0] for ln in r.stdout.splitlines()
            if ln.strip() and not ln.lstrip().startswith(".")]
    out, gi = [], 0
    for line_no in range(1, len(words) + 1):
        if line_no in bad_lines:
            out.append("")
        else:
            out.append(good[gi])
            gi += 1
    assert gi == len(good)
    return out


def test_classes_are_disjoint() -> None:
    for a in range(len(INSNS)):
        for b in range(a + 1, len(INSNS)):
            x, y = INSNS[a], INSNS[b]
            common = x.mask & y.mask
            assert (x.value ^ y.value) & common, f"{x.name} overlaps {y.name}"


def test_entries_are_well_formed() -> None:
    feats = {"svei8mm", "svef32mm", "svef64mm", "svebf16"}
    for i in INSNS:
        assert i.value & ~i.mask == 0, i.name
        assert i.feature in feats, i.name
        # Zd/Zda and Zn are always operand fields, never part of the class.
        assert i.mask & 0x3FF == 0, i.name


@needs_mc
def test_llvm_encodings_select_their_class() -> None:
    words = _encode([v.text for v in VARIANTS])
    for v, w in zip(VARIANTS, words):
        hits = matches(w)
        assert len(hits) == 1, (v.text, [h.name for h in hits])
        name, feat = EXPECTED[v.mnemonic]
        if name is not None:
            assert hits[0].name == name, v.text
        if feat is not None:
            assert hits[0].feature == feat, v.text
    by_text = dict(zip((v.text for v in VARIANTS), words))
    assert matches(by_text["fmmla z2.s, z10.s, z18.s"])[0].feature == "svef32mm"
    assert matches(by_text["fmmla z12.d, z13.d, z14.d"])[0].feature == "svef64mm"
    assert matches(by_text["usdot z30.s, z1.b, z31.b"])[0].name == "USDOT (vectors)"
    assert matches(by_text["usdot z8.s, z20.b, z4.b[0]"])[0].name == "USDOT/SUDOT (indexed)"


# Neighbours: same major opcode groups, other (SVE or SVE2) instructions.
NEIGHBOURS = [
    "sdot z0.s, z1.b, z2.b", "udot z0.d, z1.h, z2.h", "sdot z0.s, z1.b, z2.b[3]",
    "udot z0.d, z1.h, z2.h[1]", "fcvt z0.h, p0/m, z1.s", "fcvt z0.s, p0/m, z1.d",
    "fcvtnt z0.h, p0/m, z1.s", "fcvtnt z0.s, p0/m, z1.d", "fcvtlt z0.s, p0/m, z1.h",
    "fcvtx z0.s, p0/m, z1.d", "fcvtxnt z0.s, p0/m, z1.d", "fmlalb z0.s, z1.h, z2.h",
    "fmlalt z0.s, z1.h, z2.h", "fmlslb z0.s, z1.h, z2.h", "fmlalb z0.s, z1.h, z2.h[7]",
    "fmlslt z0.s, z1.h, z2.h[7]", "fmla z0.s, z1.s, z2.s[3]", "fmul z0.s, z1.s, z2.s[3]",
    "fcmla z0.s, z1.s, z2.s[1], #90", "sqdmlalb z0.s, z1.h, z2.h", "smlalb z0.s, z1.h, z2.h",
    "cdot z0.s, z1.b, z2.b, #90", "histseg z0.b, z1.b, z2.b", "mla z0.s, z1.s, z2.s[3]",
    "sqrdmlah z0.s, z1.s, z2.s", "sclamp z0.s, z1.s, z2.s", "fadd z0.s, z1.s, z2.s",
    "ftsmul z0.s, z1.s, z2.s", "bfcvtnt z0.h, p0/m, z1.s",
]


@needs_mc
def test_neighbouring_encodings_select_nothing() -> None:
    lines = [ln for ln in NEIGHBOURS if not ln.startswith("bf") and not ln.startswith("sclamp")]
    words = _encode(lines)
    for ln, w in zip(lines, words):
        assert matches(w) == [], (ln, [h.name for h in matches(w)])


@pytest.mark.parametrize("word,why", [
    (0x45429820, "SMMLA class, uns=01"),
    (0x44027820, "USDOT (vectors), size=00"),
    (0x44427820, "USDOT (vectors), size=01"),
    (0x44C27820, "USDOT (vectors), size=11"),
    (0x443A1820, "USDOT (indexed), size=00"),
    (0x447A1C20, "SUDOT (indexed), size=01"),
    (0x44FA1820, "USDOT (indexed), size=11"),
    (0x6422E420, "FP matrix multiply, opc=00"),
])
def test_unallocated_fields_are_undefined(word: int, why: str) -> None:
    hits = matches(word)
    assert len(hits) == 1, why
    with pytest.raises(Sve2Undefined):
        hits[0].fn(word, SveRegs.zeroed(32))


@needs_mc
def test_random_words_agree_with_llvm_disassembler() -> None:
    """Random words inside each class: the function raising Sve2Undefined exactly when LLVM
    14 (which knows no later extension in these spaces) calls the word invalid, and otherwise
    LLVM's mnemonic being one the class implements."""
    rng = random.Random(14)
    names = {
        "SMMLA/USMMLA/UMMLA": {"smmla", "ummla", "usmmla"},
        "USDOT (vectors)": {"usdot"},
        "USDOT/SUDOT (indexed)": {"usdot", "sudot"},
        "FMMLA (opc=00)": set(),
        "BFMMLA": {"bfmmla"},
        "FMMLA .S": {"fmmla"},
        "FMMLA .D": {"fmmla"},
        "BFCVT": {"bfcvt"},
        "BFCVTNT": {"bfcvtnt"},
        "BFDOT (vectors)": {"bfdot"},
        "BFDOT (indexed)": {"bfdot"},
        "BFMLALB/BFMLALT (vectors)": {"bfmlalb", "bfmlalt"},
        "BFMLALB/BFMLALT (indexed)": {"bfmlalb", "bfmlalt"},
    }
    assert set(names) == {i.name for i in INSNS}
    words, owners = [], []
    for insn in INSNS:
        for _ in range(24):
            words.append(insn.value | (rng.getrandbits(32) & ~insn.mask))
            owners.append(insn)
    llvm = _disassemble(words)
    regs = SveRegs.zeroed(64)
    for w, insn, mn in zip(words, owners, llvm):
        try:
            insn.fn(w, regs)
            undefined = False
        except Sve2Undefined:
            undefined = True
        assert undefined == (mn == ""), (f"{w:#010x}", insn.name, mn)
        if mn:
            assert mn in names[insn.name], (f"{w:#010x}", insn.name, mn)
