"""Element-wise integer arithmetic, compares, merges and moves across SEW/LMUL/VLEN."""
from __future__ import annotations

import random

import pytest
from rvv_helpers import enc, fill, machine, setvl, signed, vlmax

SEWS = [8, 16, 32, 64]
LMULS = [0.5, 1, 2, 8]
VLENS = [128, 256, 512]
GRID = [(s, l, v) for s in SEWS for l in LMULS for v in VLENS]


def _legal(sew: int, lmul: float) -> bool:
    return sew <= 64 * lmul


def _ref(op: str, a: int, b: int, sew: int) -> int:
    """Straightforward per-element reference (operands unsigned SEW-bit)."""
    m = (1 << sew) - 1
    sa, sb = signed(a, sew), signed(b, sew)
    if op == "vadd":
        return (a + b) & m
    if op == "vsub":
        return (a - b) & m
    if op == "vrsub":
        return (b - a) & m
    if op == "vand":
        return a & b
    if op == "vor":
        return a | b
    if op == "vxor":
        return a ^ b
    if op == "vsll":
        return (a << (b % sew)) & m
    if op == "vsrl":
        return a >> (b % sew)
    if op == "vsra":
        return (sa >> (b % sew)) & m
    if op == "vmul":
        return (a * b) & m
    if op == "vmulh":
        return ((sa * sb) >> sew) & m
    if op == "vmulhu":
        return (a * b) >> sew
    if op == "vmulhsu":
        return ((sa * b) >> sew) & m
    if op == "vdivu":
        return m if b == 0 else a // b
    if op == "vremu":
        return a if b == 0 else a % b
    if op == "vdiv":
        if b == 0:
            return m
        if sa == -(1 << (sew - 1)) and sb == -1:
            return a
        q = abs(sa) // abs(sb)
        return (q if (sa < 0) == (sb < 0) else -q) & m
    if op == "vrem":
        if b == 0:
            return a
        if sa == -(1 << (sew - 1)) and sb == -1:
            return 0
        r = abs(sa) % abs(sb)
        return (r if sa >= 0 else -r) & m
    if op == "vmin":
        return min(sa, sb) & m
    if op == "vmax":
        return max(sa, sb) & m
    if op == "vminu":
        return min(a, b)
    if op == "vmaxu":
        return max(a, b)
    raise AssertionError(op)


VV_OPS = ["vadd", "vsub", "vand", "vor", "vxor", "vsll", "vsrl", "vsra", "vmul", "vmulh",
          "vmulhu", "vmulhsu", "vdivu", "vdiv", "vremu", "vrem", "vmin", "vmax", "vminu",
          "vmaxu"]


def _interesting(sew: int, n: int, rng: random.Random) -> list[int]:
    m = (1 << sew) - 1
    pool = [0, 1, 2, m, m - 1, 1 << (sew - 1), (1 << (sew - 1)) - 1, 3, 7]
    return [rng.choice(pool) if rng.random() < 0.5 else rng.getrandbits(sew) for _ in range(n)]


@pytest.mark.parametrize("sew,lmul,vlen", GRID)
def test_vv_ops_all_elements(sew: int, lmul: float, vlen: int) -> None:
    u, x, mem = machine(vlen)
    if not _legal(sew, lmul):
        setvl(u, x, mem, sew, lmul)
        assert u.vill and u.vl == 0
        return
    vmax = vlmax(vlen, sew, lmul)
    avl = max(1, vmax - 1)                  # leave one tail element
    assert setvl(u, x, mem, sew, lmul, avl) == min(avl, vmax)
    rng = random.Random(sew * 1000 + vlen + int(lmul * 8))
    grp = max(1, int(lmul))
    vd, vs2, vs1 = 8, 16, 24
    for op in VV_OPS:
        a = _interesting(sew, vmax, rng)
        b = _interesting(sew, vmax, rng)
        old = [rng.getrandbits(sew) for _ in range(vmax)]
        fill(u, vs2, sew, a)
        fill(u, vs1, sew, b)
        fill(u, vd, sew, old)
        res = u.execute(enc(f"{op}.vv", vd, vs2, vs1), x, mem)
        assert res.dirty
        got = u.elements(vd, sew, vmax)
        want = [_ref(op, a[i], b[i], sew) for i in range(u.vl)] + old[u.vl:]
        assert got == want, op
    assert grp >= 1


@pytest.mark.parametrize("sew,lmul,vlen", [g for g in GRID if _legal(g[0], g[1])])
def test_masked_vx_vi_and_tail(sew: int, lmul: float, vlen: int) -> None:
    u, x, mem = machine(vlen)
    vmax = vlmax(vlen, sew, lmul)
    vl = setvl(u, x, mem, sew, lmul, max(1, vmax // 2 + 1))
    m = (1 << sew) - 1
    rng = random.Random(vlen + sew)
    a = [rng.getrandbits(sew) for _ in range(vmax)]
    old = [rng.getrandbits(sew) for _ in range(vmax)]
    maskbits = rng.getrandbits(vlen)
    u.write_vreg(0, maskbits.to_bytes(u.vlenb, "little"))
    fill(u, 16, sew, a)
    for mn, s1, val in [("vadd.vx", 11, 0xFFFF_FFFF_FFFF_FFFB), ("vadd.vi", 0x1D, -3),
                        ("vrsub.vi", 5, 5), ("vsll.vi", 31, 31), ("vsra.vx", 11, 3)]:
        x.write(11, val & m if mn != "vsra.vx" else 3)
        fill(u, 8, sew, old)
        u.execute(enc(mn, 8, 16, s1, vm=False), x, mem)
        got = u.elements(8, sew, vmax)
        op = mn.split(".")[0]
        b = val & m
        for i in range(vmax):
            if i < vl and (maskbits >> i) & 1:
                assert got[i] == _ref(op, a[i], b, sew), (mn, i)
            else:
                assert got[i] == old[i], (mn, i)    # masked-off and tail undisturbed


def test_hand_worked_e8() -> None:
    u, x, mem = machine(128)
    setvl(u, x, mem, 8, 1, 4)
    fill(u, 1, 8, [250, 3, 0x80, 7] + [0xAA] * 12)
    fill(u, 2, 8, [10, 0, 0xFF, 0] + [0] * 12)
    fill(u, 3, 8, [0x55] * 16)
    u.execute(enc("vadd.vv", 3, 1, 2), x, mem)
    assert u.elements(3, 8) == [4, 3, 0x7F, 7] + [0x55] * 12
    u.execute(enc("vdiv.vv", 3, 1, 2), x, mem)  # -6/10=0, 3/0=-1, -128/-1=-128, 7/0=-1
    assert u.elements(3, 8)[:4] == [0, 0xFF, 0x80, 0xFF]
    u.execute(enc("vrem.vv", 3, 1, 2), x, mem)  # -6%10=-6, 3%0=3, -128%-1=0, 7%0=7
    assert u.elements(3, 8)[:4] == [0xFA, 3, 0, 7]
    u.execute(enc("vdivu.vv", 3, 1, 2), x, mem)  # 250/10=25, 3/0=255, 128/255=0, 7/0=255
    assert u.elements(3, 8)[:4] == [25, 255, 0, 255]
    x.write(10, 0x1FF)                           # truncated to SEW: 0xFF = -1
    u.execute(enc("vmul.vx", 3, 1, 10), x, mem)
    assert u.elements(3, 8)[:4] == [6, 0xFD, 0x80, 0xF9]
    u.execute(enc("vmulh.vv", 3, 1, 2), x, mem)   # -6*10=-60 -> hi -1; -128*-1=128 -> 0
    assert u.elements(3, 8)[:4] == [0xFF, 0, 0, 0]


def test_vmulhsu_and_vsra_e64() -> None:
    u, x, mem = machine(128)
    setvl(u, x, mem, 64, 1)
    fill(u, 1, 64, [-1, 1 << 63])
    fill(u, 2, 64, [2, 1 << 63])
    u.execute(enc("vmulhsu.vv", 3, 1, 2), x, mem)
    # -1 * 2 = -2 -> high = -1; -2^63 * 2^63 = -2^126 -> high = -2^62
    assert u.elements(3, 64) == [(1 << 64) - 1, ((-(1 << 62)) & ((1 << 64) - 1))]
    u.execute(enc("vsra.vi", 3, 1, 31), x, mem)
    assert u.elements(3, 64) == [(1 << 64) - 1, ((-(1 << 32)) & ((1 << 64) - 1))]


@pytest.mark.parametrize("sew,lmul,vlen", [g for g in GRID if _legal(g[0], g[1])])
def test_compares_write_mask_bits(sew: int, lmul: float, vlen: int) -> None:
    u, x, mem = machine(vlen)
    vmax = vlmax(vlen, sew, lmul)
    vl = setvl(u, x, mem, sew, lmul, max(1, vmax - 2))
    rng = random.Random(sew + vlen)
    a = [rng.choice([0, 1, 5, (1 << sew) - 1, 1 << (sew - 1)]) for _ in range(vmax)]
    fill(u, 16, sew, a)
    x.write(12, 5)
    oldmask = rng.getrandbits(vlen)
    v0 = rng.getrandbits(vlen)
    u.write_vreg(0, v0.to_bytes(u.vlenb, "little"))
    cases = {"vmseq.vx": lambda p: p == 5, "vmsne.vx": lambda p: p != 5,
             "vmsltu.vx": lambda p: p < 5, "vmslt.vx": lambda p: signed(p, sew) < 5,
             "vmsleu.vx": lambda p: p <= 5, "vmsle.vx": lambda p: signed(p, sew) <= 5,
             "vmsgtu.vx": lambda p: p > 5, "vmsgt.vx": lambda p: signed(p, sew) > 5}
    for mn, pred in cases.items():
        for vm in (True, False):
            u.write_vreg(4, oldmask.to_bytes(u.vlenb, "little"))
            u.execute(enc(mn, 4, 16, 12, vm=vm), x, mem)
            got = int.from_bytes(u.read_vreg(4), "little")
            for i in range(vlen):
                if i < vl and (vm or (v0 >> i) & 1):
                    assert (got >> i) & 1 == int(pred(a[i])), (mn, vm, i)
                else:
                    assert (got >> i) & 1 == (oldmask >> i) & 1, (mn, vm, i)


def test_compare_vi_unsigned_uses_sign_extended_imm() -> None:
    u, x, mem = machine(128)
    setvl(u, x, mem, 16, 1, 3)
    fill(u, 1, 16, [0xFFFF, 0xFFFE, 3])
    u.execute(enc("vmsleu.vi", 2, 1, 0x1E), x, mem)   # imm -2 -> 0xFFFE unsigned
    assert int.from_bytes(u.read_vreg(2), "little") & 7 == 0b110
    u.execute(enc("vmsgt.vi", 2, 1, 0x1E), x, mem)    # signed > -2: -1 and 3
    assert int.from_bytes(u.read_vreg(2), "little") & 7 == 0b101


@pytest.mark.parametrize("sew,lmul,vlen", [(8, 1, 128), (32, 2, 256), (64, 8, 512),
                                           (16, 0.5, 128)])
def test_merge_and_vmv(sew: int, lmul: float, vlen: int) -> None:
    u, x, mem = machine(vlen)
    vmax = vlmax(vlen, sew, lmul)
    vl = setvl(u, x, mem, sew, lmul, vmax - 1)
    a = list(range(1, vmax + 1))
    b = [100 + i for i in range(vmax)]
    fill(u, 8, sew, a)
    fill(u, 16, sew, b)
    v0 = 0b1010_0110 * 0x0101010101010101
    u.write_vreg(0, (v0 & ((1 << vlen) - 1)).to_bytes(u.vlenb, "little"))
    fill(u, 24, sew, [7] * vmax)
    u.execute(enc("vmerge.vvm", 24, 8, 16, vm=False), x, mem)
    got = u.elements(24, sew, vmax)
    for i in range(vmax):
        want = (b[i] if (v0 >> i) & 1 else a[i]) if i < vl else 7
        assert got[i] == want
    u.execute(enc("vmerge.vim", 24, 8, 0x10, vm=False), x, mem)   # imm -16
    got = u.elements(24, sew, vmax)
    assert all(got[i] == ((-16 & ((1 << sew) - 1)) if (v0 >> i) & 1 else a[i])
               for i in range(vl))
    x.write(10, 0x123456789ABCDEF0)
    u.execute(enc("vmv.vx", 24, 0, 10), x, mem)
    assert u.elements(24, sew, vmax) == [0x123456789ABCDEF0 & ((1 << sew) - 1)] * vl \
        + [got[vl]] * (vmax - vl)
    u.execute(enc("vmv.vv", 24, 0, 16), x, mem)
    assert u.elements(24, sew, vmax)[:vl] == b[:vl]
    u.execute(enc("vmv.vi", 24, 0, 0x0F), x, mem)
    assert u.elements(24, sew, vmax)[:vl] == [15] * vl


def test_vstart_skips_leading_elements_and_is_cleared() -> None:
    u, x, mem = machine(128)
    setvl(u, x, mem, 32, 1)
    fill(u, 1, 32, [1, 2, 3, 4])
    fill(u, 2, 32, [10, 10, 10, 10])
    fill(u, 3, 32, [0, 0, 0, 0])
    u.vstart = 2
    u.execute(enc("vadd.vv", 3, 1, 2), x, mem)
    assert u.elements(3, 32) == [0, 0, 13, 14]
    assert u.vstart == 0
    u.vstart = 4                        # vstart >= vl: nothing happens, vstart cleared
    u.execute(enc("vadd.vv", 3, 1, 1), x, mem)
    assert u.elements(3, 32) == [0, 0, 13, 14] and u.vstart == 0


@pytest.mark.parametrize("sew,lmul,vlen", [g for g in GRID if _legal(g[0], g[1])])
def test_unmasked_vx_vi_fast_path(sew: int, lmul: float, vlen: int) -> None:
    u, x, mem = machine(vlen)
    vmax = vlmax(vlen, sew, lmul)
    vl = setvl(u, x, mem, sew, lmul, max(1, vmax - 1))
    m = (1 << sew) - 1
    rng = random.Random(sew + lmul + vlen)
    a = _interesting(sew, vmax, rng)
    old = [rng.getrandbits(sew) for _ in range(vmax)]
    fill(u, 16, sew, a)
    for mn, s1, xval in [("vadd.vx", 11, (1 << 64) - 3), ("vsub.vx", 11, 1 << (sew - 1)),
                         ("vrsub.vx", 11, 7), ("vand.vi", 0x13, 0), ("vor.vx", 11, m),
                         ("vxor.vi", 0x1F, 0), ("vadd.vi", 0x0F, 0), ("vrsub.vi", 0x10, 0)]:
        x.write(11, xval)
        fill(u, 8, sew, old)
        u.vstart = 1 if vl > 1 else 0
        first = u.vstart
        u.execute(enc(mn, 8, 16, s1), x, mem)
        b = (xval if mn.endswith("vx") else (s1 - 32 if s1 & 16 else s1)) & m
        want = [_ref(mn.split(".")[0], a[i], b, sew) if first <= i < vl else old[i]
                for i in range(vmax)]
        assert u.elements(8, sew, vmax) == want, mn
