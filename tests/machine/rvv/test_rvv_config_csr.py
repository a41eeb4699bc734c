"""vsetvli/vsetivli/vsetvl AVL rules and vill, plus CSR instruction semantics."""
from __future__ import annotations

import pytest
from rvv_helpers import XMASK, csr_insn, machine, vlmax, vsetvli, vtype_of

from emukern.errors import IllegalInstruction
from emukern.machine.rvv import RVVUnit

VILL = 1 << 63
T0, A0, A1 = 5, 10, 11


@pytest.mark.parametrize("vlen", [128, 256, 512, 1024])
@pytest.mark.parametrize("sew", [8, 16, 32, 64])
@pytest.mark.parametrize("lmul", [0.125, 0.25, 0.5, 1, 2, 4, 8])
def test_vsetvli_vlmax_and_vill(vlen: int, sew: int, lmul: float) -> None:
    u, x, mem = machine(vlen)
    x.write(A0, 10**9)
    r = u.execute(vsetvli(T0, A0, sew, lmul), x, mem)
    assert r.dirty and r.cycles == 1
    if sew > 64 * lmul:                       # LMUL < SEW/ELEN: unsupported
        assert u.vtype == VILL and u.vl == 0 and x.read(T0) == 0
    else:
        assert u.vl == x.read(T0) == vlmax(vlen, sew, lmul)
        assert u.vtype == vtype_of(sew, lmul)


def test_avl_rules() -> None:
    u, x, mem = machine(256)
    x.write(A0, 5)
    u.execute(vsetvli(T0, A0, 32, 1), x, mem)          # AVL from a register
    assert u.vl == 5 and x.read(T0) == 5
    u.execute(vsetvli(T0, 0, 32, 1), x, mem)           # rs1=x0, rd!=x0: VLMAX
    assert u.vl == 8
    x.write(A0, 3)
    u.execute(vsetvli(T0, A0, 32, 1), x, mem)
    u.execute(vsetvli(0, 0, 16, 0.5), x, mem)          # same VLMAX (8): keep vl
    assert u.vl == 3 and u.vtype == vtype_of(16, 0.5)
    u.execute(vsetvli(0, 0, 16, 1), x, mem)            # VLMAX changes: vill
    assert u.vtype == VILL and u.vl == 0
    u.execute(vsetvli(0, 0, 16, 1), x, mem)            # from vill: stays vill
    assert u.vtype == VILL
    x.write(A0, 4)
    u.execute(vsetvli(A0, A0, 8, 1), x, mem)           # rd == rs1
    assert x.read(A0) == 4 and u.vl == 4


def test_vsetivli_and_vsetvl() -> None:
    u, x, mem = machine(128)
    zimm = vtype_of(8, 1, False, False)
    w = (3 << 30) | (zimm << 20) | (31 << 15) | (7 << 12) | (T0 << 7) | 0x57  # avl=31
    u.execute(w, x, mem)
    assert u.vl == 16 and x.read(T0) == 16 and u.vtype == zimm
    x.write(A1, vtype_of(64, 2))
    x.write(A0, 3)
    w = (1 << 31) | (A1 << 20) | (A0 << 15) | (7 << 12) | (T0 << 7) | 0x57
    u.execute(w, x, mem)
    assert u.vl == 3 and u.vtype == vtype_of(64, 2)
    for bad in (1 << 8, 4, (4 << 3), VILL | vtype_of(8, 1)):
        x.write(A1, bad)
        u.execute(w, x, mem)
        assert u.vtype == VILL and u.vl == 0 and x.read(T0) == 0
    # vsetvl with bits 30:25 non-zero is reserved
    with pytest.raises(IllegalInstruction):
        u.execute(w | (1 << 25), x, mem)


def test_vsetvli_reserved_zimm_bits_set_vill() -> None:
    u, x, mem = machine(128)
    w = (0x100 << 20) | (7 << 12) | (T0 << 7) | 0x57
    u.execute(w, x, mem)
    assert u.vtype == VILL


def test_vill_makes_vtype_dependent_insns_illegal() -> None:
    u, x, mem = machine(128)
    assert u.vtype == VILL
    with pytest.raises(IllegalInstruction, match="vadd.vv.*vill"):
        u.execute(0x02000057 | (8 << 7) | (16 << 20) | (24 << 15), x, mem)
    with pytest.raises(IllegalInstruction, match="vle32.v"):
        u.execute(0x02056407, x, mem)


def test_reset_and_helpers() -> None:
    u = RVVUnit(vlen=128)
    assert (u.vlen, u.vlenb, u.elen, u.dlen) == (128, 16, 64, 128)
    assert len(u.v) == 32 * 16 and u.vtype == VILL and u.vl == 0
    u.write_vreg(3, bytes(range(16)))
    assert u.read_vreg(3) == bytes(range(16))
    assert u.elements(3, 32) == [0x03020100, 0x07060504, 0x0B0A0908, 0x0F0E0D0C]
    assert u.elements(3, 64, 3)[2] == 0
    u.vxrm = 3
    u.reset()
    assert u.read_vreg(3) == bytes(16) and u.vxrm == 0 and u.vtype == VILL
    with pytest.raises(ValueError):
        RVVUnit(vlen=96)
    with pytest.raises(ValueError):
        u.write_vreg(0, b"123")


CSRS = {"vstart": 0x008, "vxsat": 0x009, "vxrm": 0x00A, "vcsr": 0x00F, "vl": 0xC20,
        "vtype": 0xC21, "vlenb": 0xC22}


def test_csr_reads() -> None:
    u, x, mem = machine(512)
    x.write(A0, 7)
    u.execute(vsetvli(T0, A0, 16, 2), x, mem)
    for name, want in [("vl", 7), ("vtype", vtype_of(16, 2)), ("vlenb", 64), ("vstart", 0)]:
        r = u.execute(csr_insn(2, A1, CSRS[name], 0), x, mem)   # csrr a1, csr
        assert x.read(A1) == want and not r.dirty


def test_csr_writes() -> None:
    u, x, mem = machine(256)
    x.write(A0, 0b111)
    r = u.execute(csr_insn(1, A1, CSRS["vcsr"], A0), x, mem)    # csrrw a1, vcsr, a0
    assert r.dirty and x.read(A1) == 0 and u.vxrm == 3 and u.vxsat == 1
    u.execute(csr_insn(7, A1, CSRS["vxrm"], 1), x, mem)         # csrrci a1, vxrm, 1
    assert x.read(A1) == 3 and u.vxrm == 2
    u.execute(csr_insn(6, 0, CSRS["vxsat"], 0), x, mem)         # csrrsi x0, vxsat, 0: read
    assert u.vxsat == 1
    u.execute(csr_insn(3, A1, CSRS["vxsat"], A0), x, mem)       # csrrc: clear
    assert x.read(A1) == 1 and u.vxsat == 0
    u.execute(csr_insn(2, A1, CSRS["vcsr"], 0), x, mem)
    assert x.read(A1) == 0b100
    x.write(A0, 0xFFFF)
    u.execute(csr_insn(1, 0, CSRS["vstart"], A0), x, mem)       # csrw vstart: lg2(VLEN) bits
    assert u.vstart == 0xFF
    u.execute(csr_insn(5, 0, CSRS["vstart"], 3), x, mem)        # csrwi vstart, 3
    assert u.vstart == 3


@pytest.mark.parametrize("name", ["vl", "vtype", "vlenb"])
def test_read_only_csrs(name: str) -> None:
    u, x, mem = machine(128)
    for insn in (csr_insn(1, A1, CSRS[name], A0), csr_insn(1, 0, CSRS[name], 0),
                 csr_insn(2, A1, CSRS[name], A0), csr_insn(7, A1, CSRS[name], 1)):
        with pytest.raises(IllegalInstruction, match=f"{name} is read-only"):
            u.execute(insn, x, mem)
    u.execute(csr_insn(3, A1, CSRS[name], 0), x, mem)           # csrrc with x0 only reads
    assert x.read(A1) == {"vl": 0, "vtype": VILL, "vlenb": 16}[name]
    assert XMASK  # keep import used
