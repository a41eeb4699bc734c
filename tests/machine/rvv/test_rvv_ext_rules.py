"""The legality rules and the fault/vstart behaviour of the instruction groups the
upstream-successors issue added (their results are checked against QEMU in
test_rvv_elf_diff_ext.py): reserved register overlaps, EEW > ELEN and EMUL out of range
raise IllegalInstruction; a fault in an indexed or segment access sets vstart to the
faulting element (segment) and keeps the ones before it; fault-only-first trims vl."""
from __future__ import annotations

import pytest
from rvv_helpers import fill, machine, opv, setvl, vmem

from emukern.errors import IllegalInstruction, MemoryFault

# OPM funct6 / OPI funct6 used below
VWADDU_VV = (0x30, 2)
VNSRL_WV = (0x2C, 0)
VRGATHER_VV = (0x0C, 0)
VCOMPRESS = (0x17, 2)
VADC_VVM = (0x10, 0)


def _run(u, x, mem, word: int) -> None:
    u.execute(word, x, mem)


@pytest.mark.parametrize("sew,lmul,word,why", [
    (64, 1, opv(*VWADDU_VV, 8, 16, 24), "2*SEW > ELEN"),
    (8, 8, opv(*VWADDU_VV, 8, 16, 24), "EMUL 16"),
    (8, 1, opv(*VWADDU_VV, 8, 8, 24), "wide destination over the lowest source register"),
    (8, 1, opv(*VNSRL_WV, 9, 8, 24), "narrow destination over the upper source register"),
    (32, 1, opv(0x12, 2, 8, 16, 3), "vsext.vf8 from EEW 4"),
    (8, 0.25, opv(0x12, 2, 8, 16, 7), "vsext.vf2 with EMUL 1/8 of EEW 4"),
    (8, 1, opv(*VRGATHER_VV, 8, 8, 24), "vrgather destination = source"),
    (8, 2, opv(*VRGATHER_VV, 8, 16, 9), "vrgather destination over the index group"),
    (8, 1, opv(*VADC_VVM, 8, 16, 24, vm=True), "vadc with vm=1"),
    (8, 1, opv(*VADC_VVM, 0, 16, 24, vm=False), "vadc writing v0"),
    (8, 1, opv(0x14, 2, 16, 16, 1), "vmsbf.m destination = source"),
    (8, 1, opv(0x2D, 2, 0, 16, 24, vm=False), "masked vmacc writing v0"),
    (16, 4, vmem(True, 16, 8, 10, nf=2), "NFIELDS*EMUL = 12"),
    (8, 1, vmem(True, 8, 28, 10, nf=5), "segment past v31"),
    (8, 1, vmem(True, 8, 8, 10, mop=1, sub=9, nf=1), "segment over the index register"),
    (8, 1, vmem(True, 64, 8, 10, mop=3, sub=4) | (1 << 28), "mew=1"),
    (8, 8, vmem(True, 16, 8, 10, mop=1, sub=4), "index EMUL 16"),
])
def test_reserved_raise(sew: int, lmul: float, word: int, why: str) -> None:
    u, x, mem = machine(256)
    setvl(u, x, mem, sew, lmul, 5)
    with pytest.raises(IllegalInstruction):
        _run(u, x, mem, word)


@pytest.mark.parametrize("word", [
    opv(*VWADDU_VV, 8, 9, 24),        # source in the highest part of the wide destination
    opv(*VNSRL_WV, 8, 8, 24),         # narrow destination in the lowest part of the source
])
def test_allowed_overlaps(word: int) -> None:
    u, x, mem = machine(256)
    setvl(u, x, mem, 8, 1, 5)
    _run(u, x, mem, word)


def test_vcompress_and_mask_unary_need_vstart_zero() -> None:
    u, x, mem = machine(128)
    setvl(u, x, mem, 8, 1, 8)
    u.vstart = 2
    with pytest.raises(IllegalInstruction):
        _run(u, x, mem, opv(*VCOMPRESS, 8, 16, 1))
    u.vstart = 2
    with pytest.raises(IllegalInstruction):
        _run(u, x, mem, opv(0x14, 2, 8, 16, 16))          # viota.m


def test_vill_raises() -> None:
    u, x, mem = machine(128)
    with pytest.raises(IllegalInstruction):
        _run(u, x, mem, opv(*VWADDU_VV, 8, 16, 24))
    with pytest.raises(IllegalInstruction):
        _run(u, x, mem, vmem(True, 8, 8, 10, nf=2))


def test_segment_load_fault_sets_vstart_and_resumes() -> None:
    u, x, mem = machine(128)
    setvl(u, x, mem, 8, 1, 10)
    mem.buf[:64] = bytes(range(64))
    x.write(11, mem.base)
    mem.faults = {mem.base + 3 * 6 + 1}                  # segment 6, field 1
    w = vmem(True, 8, 8, 11, nf=2)                       # vlseg3e8.v v8, (a1)
    with pytest.raises(MemoryFault):
        _run(u, x, mem, w)
    assert u.vstart == 6
    assert u.read_vreg(8)[:6] == bytes(range(0, 18, 3))
    mem.faults = set()
    _run(u, x, mem, w)
    assert u.vstart == 0
    for f in range(3):
        assert u.read_vreg(8 + f)[:10] == bytes(range(f, 30, 3))


def test_segment_ff_trims_vl() -> None:
    u, x, mem = machine(128)
    setvl(u, x, mem, 16, 1, 8)
    x.write(11, mem.base)
    mem.faults = {mem.base + 4 * 5}                      # segment 5 of 4-byte segments
    _run(u, x, mem, vmem(True, 16, 8, 11, nf=1, sub=0b10000))
    assert u.vl == 5 and u.vstart == 0


def test_indexed_store_fault_sets_vstart() -> None:
    u, x, mem = machine(128)
    setvl(u, x, mem, 32, 1, 4)
    fill(u, 16, 32, [0, 8, 0x100, 4])                    # byte offsets
    fill(u, 8, 32, [1, 2, 3, 4])
    x.write(11, mem.base)
    mem.faults = {mem.base + 0x100}
    with pytest.raises(MemoryFault):
        _run(u, x, mem, vmem(False, 32, 8, 11, mop=3, sub=16))     # vsoxei32.v v8, (a1), v16
    assert u.vstart == 2
    assert mem.buf[0:4] == (1).to_bytes(4, "little") and mem.buf[8:12] == (2).to_bytes(4, "little")
    assert mem.buf[4:8] == bytes(4)                      # element 3 not yet stored


def test_fixed_point_sets_vxsat_only_for_active_elements() -> None:
    u, x, mem = machine(128)
    setvl(u, x, mem, 8, 1, 4)
    fill(u, 16, 8, [250, 1, 2, 3])
    fill(u, 24, 8, [10, 1, 1, 1])
    fill(u, 0, 8, [0b1110])
    _run(u, x, mem, opv(0x20, 0, 8, 16, 24, vm=False))             # vsaddu.vv masked
    assert u.vxsat == 0
    _run(u, x, mem, opv(0x20, 0, 8, 16, 24))
    assert u.vxsat == 1 and u.elements(8, 8, 4) == [255, 2, 3, 4]
