"""Reserved, misaligned and unimplemented encodings raise IllegalInstruction naming the
instruction; nothing in the vector space runs silently with a wrong result."""
from __future__ import annotations

import pytest
from rvv_helpers import enc, machine, opv, setvl, vmem

from emukern.errors import IllegalInstruction


# the integer instructions the unit once refused (the upstream-successors issue implemented
# them): they now decode to a handler under their own name
IMPLEMENTED = [
    (0xC6222457, "vwadd.vv"),
    (enc("vmacc.vv", 8, 16, 24), "vmacc.vv"),
    (enc("vadc.vvm", 8, 16, 24, vm=False), "vadc.vvm"),
    (enc("vsaddu.vi", 8, 16, 3), "vsaddu.vi"),
    (enc("vrgather.vv", 8, 16, 24), "vrgather.vv"),
    (enc("vnsrl.vv", 8, 16, 24), "vnsrl.wv"),
    (opv(0x12, 2, 8, 16, 7), "vsext.vf2"),
    (opv(0x14, 2, 8, 16, 16), "viota.m"),
    (opv(0x17, 2, 8, 16, 24), "vcompress.vm"),
    (vmem(True, 32, 8, 10, nf=1), "vlseg2e32.v"),
    (vmem(False, 16, 8, 10, mop=1, sub=4), "vsuxei16.v"),
    (vmem(True, 64, 8, 10, mop=3, sub=4), "vloxei64.v"),
    (vmem(True, 8, 8, 10, mop=2, sub=11, nf=3), "vlsseg4e8.v"),
]


@pytest.mark.parametrize("word,name", IMPLEMENTED)
def test_formerly_unimplemented_decode(word: int, name: str) -> None:
    from emukern.machine.rvv.decode import decode
    d = decode(word)
    assert d.name == name and not d.reason


@pytest.mark.parametrize("word,name", [
    (0x022190D7, "vfadd.vv"),
    (opv(0x2C, 1, 8, 16, 24), "vfmacc.vv"),
])
def test_unimplemented_named(word: int, name: str) -> None:
    u, x, mem = machine(256)
    setvl(u, x, mem, 32, 1)
    with pytest.raises(IllegalInstruction) as ei:
        u.execute(word, x, mem)
    assert ei.value.reason == f"{name} is not implemented by emukern's RVV unit"
    assert ei.value.word == word


@pytest.mark.parametrize("word", [
    opv(0x01, 0, 8, 16, 24),             # OPIVV funct6=1 is reserved
    enc("vrsub.vx", 8, 16, 24) & ~(7 << 12),   # vrsub has no .vv
    opv(0x10, 2, 8, 16, 5),              # VWXUNARY0 vs1=5
    opv(0x10, 6, 8, 3, 5),               # vmv.s.x with vs2 != 0
    opv(0x17, 0, 8, 4, 16),              # vmv.v.v with vs2 != 0
    vmem(True, 8, 8, 10, sub=0b00011),   # unknown lumop
    vmem(True, 8, 8, 10) | (1 << 28),    # mew=1
    vmem(True, 16, 8, 10, sub=0b01011),  # vlm.v with EEW=16
    opv(0x27, 3, 8, 16, 2),              # vmv3r.v
])
def test_reserved(word: int) -> None:
    u, x, mem = machine(256)
    setvl(u, x, mem, 32, 1)
    with pytest.raises(IllegalInstruction, match="reserved"):
        u.execute(word, x, mem)


def test_misaligned_groups() -> None:
    u, x, mem = machine(256)
    setvl(u, x, mem, 32, 4)
    for word, name in [(enc("vadd.vv", 9, 16, 24), "vadd.vv"),
                       (enc("vadd.vv", 8, 18, 24), "vadd.vv"),
                       (enc("vadd.vv", 8, 16, 25), "vadd.vv"),
                       (enc("vsub.vx", 8, 17, 5), "vsub.vx"),
                       (enc("vmseq.vv", 0, 17, 24), "vmseq.vv"),
                       (enc("vmseq.vv", 17, 16, 24), "vmseq.vv"),   # vd inside vs2 group
                       (enc("vredsum.vs", 1, 18, 2), "vredsum.vs"),
                       (enc("vslideup.vx", 14, 16, 5), "vslideup.vx"),
                       (enc("vslideup.vx", 16, 16, 5), "vslideup.vx"),  # vd overlaps vs2
                       (enc("vmerge.vvm", 0, 16, 24, vm=False), "vmerge.vvm"),
                       (enc("vadd.vv", 0, 16, 24, vm=False), "vadd.vv"),
                       (opv(0x27, 3, 9, 16, 1), "vmv2r.v")]:
        with pytest.raises(IllegalInstruction, match=name):
            u.execute(word, x, mem)
    # a compare's mask destination may be the lowest register of a source group, or v0
    u.execute(enc("vmseq.vv", 16, 16, 24), x, mem)
    u.execute(enc("vmseq.vv", 0, 16, 24, vm=False), x, mem)


def test_mask_logic_requires_vm1_and_vmv_x_s_too() -> None:
    u, x, mem = machine(128)
    setvl(u, x, mem, 8, 1)
    with pytest.raises(IllegalInstruction, match="vmand.mm"):
        u.execute(enc("vmand.mm", 1, 2, 3, vm=False), x, mem)
    with pytest.raises(IllegalInstruction, match="vmv.x.s"):
        u.execute(opv(0x10, 2, 10, 8, 0, vm=False), x, mem)


def test_not_vector_words() -> None:
    u, x, mem = machine(128)
    for w in (0x00000013, 0x0005A507, 0x30002573):   # addi, flw, csrr mstatus
        with pytest.raises(IllegalInstruction, match="not a vector"):
            u.execute(w, x, mem)


def test_decode_cache_is_bounded() -> None:
    from emukern.machine.rvv import unit as unit_mod
    u, x, mem = machine(128)
    setvl(u, x, mem, 8, 1)
    for i in range(unit_mod._CACHE_LIMIT + 10):
        try:
            u.execute(0x57 | (i << 7), x, mem)
        except IllegalInstruction:
            pass
    assert len(u._decoded) <= unit_mod._CACHE_LIMIT
