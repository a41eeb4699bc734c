"""Slides, reductions, mask-register logic, vcpop/vfirst, vid and scalar moves."""
from __future__ import annotations

import random

import pytest
from rvv_helpers import XMASK, enc, fill, machine, opv, setvl, signed, vlmax

GRID = [(s, l, v) for s in (8, 16, 32, 64) for l in (0.5, 1, 2, 8) for v in (128, 256, 512)
        if s <= 64 * l]


@pytest.mark.parametrize("sew,lmul,vlen", GRID)
def test_slides(sew: int, lmul: float, vlen: int) -> None:
    u, x, mem = machine(vlen)
    vmax = vlmax(vlen, sew, lmul)
    vl = setvl(u, x, mem, sew, lmul, max(1, vmax - 1))
    m = (1 << sew) - 1
    src = [(i * 7 + 1) & m for i in range(vmax)]
    old = [0x5A & m] * vmax
    fill(u, 16, sew, src)
    for off in (0, 1, 3, vmax - 1, vmax + 5, 1 << 40):
        x.write(10, off)
        fill(u, 8, sew, old)
        u.execute(enc("vslideup.vx", 8, 16, 10), x, mem)
        want = [src[i - off] if off <= i < vl else old[i] for i in range(vmax)]
        assert u.elements(8, sew, vmax) == want, ("up", off)
        fill(u, 8, sew, old)
        u.execute(enc("vslidedown.vx", 8, 16, 10), x, mem)
        want = [(src[i + off] if i + off < vmax else 0) if i < vl else old[i]
                for i in range(vmax)]
        assert u.elements(8, sew, vmax) == want, ("down", off)
    x.write(11, 0xFFFF_FFFF_FFFF_FF9C)            # -100
    fill(u, 8, sew, old)
    u.execute(enc("vslide1up.vx", 8, 16, 11), x, mem)
    want = [(-100 & m) if i == 0 else src[i - 1] if i < vl else old[i] for i in range(vmax)]
    assert u.elements(8, sew, vmax) == want
    fill(u, 8, sew, old)
    u.execute(enc("vslide1down.vx", 8, 16, 11), x, mem)
    want = [src[i + 1] if i < vl - 1 else (-100 & m) if i == vl - 1 else old[i]
            for i in range(vmax)]
    assert u.elements(8, sew, vmax) == want
    # .vi forms use an unsigned 5-bit offset
    fill(u, 8, sew, old)
    u.execute(enc("vslidedown.vi", 8, 16, 31), x, mem)
    want = [(src[i + 31] if i + 31 < vmax else 0) if i < vl else old[i] for i in range(vmax)]
    assert u.elements(8, sew, vmax) == want


def test_masked_slideup_keeps_inactive() -> None:
    u, x, mem = machine(128)
    setvl(u, x, mem, 32, 1)
    fill(u, 2, 32, [1, 2, 3, 4])
    fill(u, 4, 32, [9, 9, 9, 9])
    fill(u, 0, 32, [0b1010, 0, 0, 0])
    u.execute(enc("vslideup.vi", 4, 2, 1, vm=False), x, mem)
    assert u.elements(4, 32) == [9, 1, 9, 3]


@pytest.mark.parametrize("sew,lmul,vlen", GRID)
def test_reductions(sew: int, lmul: float, vlen: int) -> None:
    u, x, mem = machine(vlen)
    vmax = vlmax(vlen, sew, lmul)
    vl = setvl(u, x, mem, sew, lmul, max(1, vmax - 1))
    m = (1 << sew) - 1
    rng = random.Random(sew * vlen)
    a = [rng.getrandbits(sew) for _ in range(vmax)]
    init = rng.getrandbits(sew)
    fill(u, 8, sew, a)
    fill(u, 4, sew, [init])
    v0 = rng.getrandbits(vlen)
    u.write_vreg(0, v0.to_bytes(u.vlenb, "little"))
    refs = {
        "vredsum": lambda xs: (init + sum(xs)) & m,
        "vredand": lambda xs: _fold(lambda p, q: p & q, xs, init),
        "vredor": lambda xs: _fold(lambda p, q: p | q, xs, init),
        "vredxor": lambda xs: _fold(lambda p, q: p ^ q, xs, init),
        "vredminu": lambda xs: min([init] + xs),
        "vredmaxu": lambda xs: max([init] + xs),
        "vredmin": lambda xs: min([signed(init, sew)] + [signed(p, sew) for p in xs]) & m,
        "vredmax": lambda xs: max([signed(init, sew)] + [signed(p, sew) for p in xs]) & m,
    }
    for name, ref in refs.items():
        for vm in (True, False):
            fill(u, 2, sew, [0x33] * (u.vlenb * 8 // sew))
            u.execute(enc(f"{name}.vs", 2, 8, 4, vm=vm), x, mem)
            active = [a[i] for i in range(vl) if vm or (v0 >> i) & 1]
            got = u.elements(2, sew)
            assert got[0] == ref(active), (name, vm)
            assert got[1:] == [0x33] * (len(got) - 1)      # rest of vd undisturbed


def _fold(f, xs, init):  # type: ignore[no-untyped-def]
    for p in xs:
        init = f(init, p)
    return init


def test_reduction_vl0_leaves_vd_and_vstart_nonzero_illegal() -> None:
    from emukern.errors import IllegalInstruction
    u, x, mem = machine(128)
    setvl(u, x, mem, 32, 1, 0)
    fill(u, 3, 32, [77])
    u.execute(enc("vredsum.vs", 3, 1, 2), x, mem)
    assert u.elements(3, 32)[0] == 77
    setvl(u, x, mem, 32, 1, 4)
    u.vstart = 1
    with pytest.raises(IllegalInstruction, match="vredsum.vs"):
        u.execute(enc("vredsum.vs", 3, 1, 2), x, mem)


@pytest.mark.parametrize("vlen", [128, 256, 512])
def test_mask_logic_cpop_first(vlen: int) -> None:
    u, x, mem = machine(vlen)
    vl = setvl(u, x, mem, 8, 1, vlen // 8 - 3)
    rng = random.Random(vlen)
    a, b, old = rng.getrandbits(vlen), rng.getrandbits(vlen), rng.getrandbits(vlen)
    u.write_vreg(1, a.to_bytes(u.vlenb, "little"))
    u.write_vreg(2, b.to_bytes(u.vlenb, "little"))
    full = (1 << vlen) - 1
    body = (1 << vl) - 1
    ops = {"vmand": a & b, "vmnand": ~(a & b), "vmandn": a & ~b, "vmor": a | b,
           "vmnor": ~(a | b), "vmorn": a | ~b, "vmxor": a ^ b, "vmxnor": ~(a ^ b)}
    for name, r in ops.items():
        u.write_vreg(3, old.to_bytes(u.vlenb, "little"))
        u.execute(enc(f"{name}.mm", 3, 1, 2), x, mem)       # vd = vs2 op vs1
        got = int.from_bytes(u.read_vreg(3), "little")
        assert got == ((r & body) | (old & ~body)) & full, name
    u.write_vreg(0, b.to_bytes(u.vlenb, "little"))
    u.execute(0x42082557 | (1 << 20), x, mem)                            # vcpop.m a0, v1
    assert x.read(10) == bin(a & body).count("1")
    u.execute(0x40082557 | (1 << 20), x, mem)                            # vcpop.m a0, v1, v0.t
    assert x.read(10) == bin(a & b & body).count("1")
    u.execute(0x4208A557 | (1 << 20), x, mem)                             # vfirst.m a0, v1
    low = a & body
    assert x.read(10) == ((low & -low).bit_length() - 1 if low else XMASK)
    u.write_vreg(1, bytes(u.vlenb))
    u.execute(0x4208A557 | (1 << 20), x, mem)
    assert x.read(10) == XMASK


@pytest.mark.parametrize("sew,lmul,vlen", GRID)
def test_vid_and_scalar_moves(sew: int, lmul: float, vlen: int) -> None:
    u, x, mem = machine(vlen)
    vmax = vlmax(vlen, sew, lmul)
    vl = setvl(u, x, mem, sew, lmul, max(1, vmax - 1))
    fill(u, 8, sew, [3] * vmax)
    u.execute(opv(0x14, 2, 8, 0, 17), x, mem)                 # vid.v v8
    assert u.elements(8, sew, vmax) == [i & ((1 << sew) - 1) for i in range(vl)] + [3]
    fill(u, 8, sew, [-2] + [5] * (vmax - 1))
    u.execute(opv(0x10, 2, 10, 8, 0), x, mem)                 # vmv.x.s a0, v8
    assert x.read(10) == (-2) & XMASK                          # sign-extended to XLEN
    x.write(11, 0x8877665544332211)
    u.execute(opv(0x10, 6, 8, 0, 11), x, mem)                 # vmv.s.x v8, a1
    assert u.elements(8, sew, vmax) == [0x8877665544332211 & ((1 << sew) - 1)] + [5] * (vmax - 1)


def test_vmv_x_s_runs_with_vl0_and_vmv_s_x_does_not() -> None:
    u, x, mem = machine(128)
    setvl(u, x, mem, 32, 1, 0)
    fill(u, 8, 32, [0x80000000])
    u.execute(opv(0x10, 2, 10, 8, 0), x, mem)
    assert x.read(10) == 0xFFFFFFFF80000000
    x.write(11, 5)
    u.execute(opv(0x10, 6, 8, 0, 11), x, mem)
    assert u.elements(8, 32)[0] == 0x80000000


def test_masked_vid() -> None:
    u, x, mem = machine(128)
    setvl(u, x, mem, 16, 1)
    fill(u, 0, 16, [0b01100101])
    fill(u, 4, 16, [0xEEEE] * 8)
    u.execute(opv(0x14, 2, 4, 0, 17, vm=False), x, mem)
    assert u.elements(4, 16) == [0, 0xEEEE, 2, 0xEEEE, 0xEEEE, 5, 6, 0xEEEE]
