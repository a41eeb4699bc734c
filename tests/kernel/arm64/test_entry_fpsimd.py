"""kernel/arch/arm64/entry_fpsimd.py: the kernel's entry-fpsimd.S sequences and the sve_state area."""
from __future__ import annotations

import pytest

from emukern.kernel.arch.arm64.entry_fpsimd import (SEQS, STUB_IMAGE, STUB_TEXT, STUB_WORDS, STUBS,
                                               SveStateArea)
from emukern.machine.cpu_arm64 import BOUNCE_SIZE, KERNEL_SEQ_RET, KERNEL_TEXT


def has_llvm_mc() -> bool:
    from emukern.errors import AssemblerError
    from emukern.loader.asm import _find_mc
    try:
        _find_mc()
        return True
    except AssemblerError:
        return False


@pytest.mark.skipif(not has_llvm_mc(), reason="llvm-mc not installed")
@pytest.mark.parametrize("name", sorted(STUB_WORDS))
def test_sve_stub_words_match_llvm_mc(name):
    from emukern.loader.asm import assemble_snippet
    code = assemble_snippet(STUB_TEXT[name], "arm64")
    words = [int.from_bytes(code[i:i + 4], "little") for i in range(0, len(code), 4)]
    assert words == STUB_WORDS[name]
    assert STUBS[name][1] == len(words)


@pytest.mark.parametrize("name", sorted(STUB_WORDS))
def test_layout_names_each_sequence_at_its_words(name):
    q = SEQS[name]
    assert STUBS[name] == (KERNEL_TEXT + q.offset, q.length)
    words = [int.from_bytes(STUB_IMAGE[q.offset + 4 * i:q.offset + 4 * i + 4], "little") for i in range(q.length)]
    assert words == STUB_WORDS[name] and words[-1] == KERNEL_SEQ_RET
    assert (q.loads, q.saves) == (name.endswith("_load_state"), name.endswith("_save_state"))


def test_sve_stub_area_layout():
    a = SveStateArea(slots=4, max_vl=2048)
    assert a.p_off == 32 * 256 and a.fp_off >= a.p_off + 17 * 32 and a.slot_size % 64 == 0
    assert a.slot_size <= BOUNCE_SIZE               # one slot at the largest VL fits the bounce buffer
    s1, s2 = a.alloc(), a.alloc()
    assert s2 - s1 == a.slot_size or s1 - s2 == a.slot_size
    a.write(s1, b"\xff" * 16)
    assert bytes(a.view(s1)[:16]) == b"\xff" * 16 and len(a.view(s1)) == a.slot_size
    a.release(s1)
    assert a.read(a.alloc(), 16) == bytes(16)         # slots come back zeroed
