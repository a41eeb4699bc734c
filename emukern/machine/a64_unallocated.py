"""AArch64 words that Unicorn 2.1.4's translator cannot be shown: it aborts the host on them.

QEMU 5.0's ``translate-a64.c`` (inside Unicorn 2.1.4) decodes the AdvSIMD half-precision
classes in two steps: a first switch lets some unallocated (U, a, opcode) combinations through,
and the second switch that picks the operation ends in ``g_assert_not_reached()`` for them
(translate-a64.c:11975 three-same fp16, :13051 two-reg-misc fp16, :13113/:13171 scalar
two-reg-misc fp16) — SIGABRT of the whole process, where the CPU (and qemu-aarch64, whose newer
QEMU rejects them) takes an undefined-instruction exception.

The tables below are the combinations that abort, found by sweeping every (Q, U, a, opcode) of
the four fp16 classes in a forked child per case (``tools/fuzz_insn.py --sweep fp16``: 314 of
480 shapes abort, none of the scalar three-same class; the register fields never matter, and Q
does not either).  tests/hostile/test_machine_fp16.py re-runs the sweep against the installed
Unicorn and checks this predicate against it, both ways.
"""
from __future__ import annotations

from emukern.machine.a64_atomics import WordFilter

# (U, a, opcode) that abort, per class
_THREE_SAME_FP16 = frozenset({
    (0, 0, 5), (0, 1, 3), (0, 1, 4), (0, 1, 5), (1, 0, 1), (1, 1, 1), (1, 1, 3), (1, 1, 7)})
_TWO_MISC_FP16 = frozenset(
    {(0, 0, o) for o in [*range(24), 30, 31]}
    | {(0, 1, o) for o in [*range(12), *range(16, 24), 28, 30, 31]}
    | {(1, 0, o) for o in [*range(24), 30, 31]}
    | {(1, 1, o) for o in [*range(12), 14, *range(16, 25), 28, 30]})
_SCALAR_TWO_MISC_FP16 = frozenset(
    {(0, 0, o) for o in [*range(24), 30, 31]}
    | {(0, 1, o) for o in [*range(12), 15, *range(16, 24), 28, 30]}
    | {(1, 0, o) for o in [*range(24), 30, 31]}
    | {(1, 1, o) for o in [*range(12), 14, *range(16, 25), 28, 30, 31]})

# class masks: fixed bits of each encoding class
_3SAME_MASK, _3SAME_VAL = 0x9F60C400, 0x0E400400      # 0 Q U 01110 a 1 0 Rm 00 opc 1 Rn Rd
_2MISC_MASK, _2MISC_VAL = 0x9F7E0C00, 0x0E780800      # 0 Q U 01110 a 111100 opcode 10 Rn Rd
_S2MISC_MASK, _S2MISC_VAL = 0xDF7E0C00, 0x5E780800    # 01 U 11110 a 111100 opcode 10 Rn Rd

# the words of these classes (their fixed bits), found without a Python step per word
_CANDIDATES = WordFilter([(_3SAME_MASK, _3SAME_VAL), (_2MISC_MASK, _2MISC_VAL), (_S2MISC_MASK, _S2MISC_VAL)])


def translator_aborts(word: int) -> bool:
    """True if Unicorn 2.1.4 aborts the host process when it translates ``word``."""
    u, a = (word >> 29) & 1, (word >> 23) & 1
    if word & _3SAME_MASK == _3SAME_VAL:
        return (u, a, (word >> 11) & 7) in _THREE_SAME_FP16
    if word & _2MISC_MASK == _2MISC_VAL:
        return (u, a, (word >> 12) & 0x1F) in _TWO_MISC_FP16
    if word & _S2MISC_MASK == _S2MISC_VAL:
        return (u, a, (word >> 12) & 0x1F) in _SCALAR_TWO_MISC_FP16
    return False


def find_aborting_words(data: bytes, base: int) -> list[int]:
    """Addresses of the words in ``data`` (4-byte aligned at ``base``) the translator aborts on."""
    out = []
    for i in _CANDIDATES.offsets(data):
        if translator_aborts(int.from_bytes(data[i:i + 4], "little")):
            out.append(base + i)
    return out
