"""Vector loads and stores: unit-stride, strided, mask, whole-register, fault-only-first,
masking, tail handling and vstart after a fault."""
from __future__ import annotations

import pytest
from rvv_helpers import fill, machine, setvl, vlmax, vmem

from emukern.errors import IllegalInstruction, MemoryFault

A0, A1 = 10, 11
GRID = [(s, l, v) for s in (8, 16, 32, 64) for l in (0.5, 1, 2, 8) for v in (128, 256, 512)
        if s <= 64 * l]


def _pattern(n: int) -> bytes:
    return bytes((i * 37 + 11) & 0xFF for i in range(n))


@pytest.mark.parametrize("sew,lmul,vlen", GRID)
def test_unit_stride_roundtrip(sew: int, lmul: float, vlen: int) -> None:
    u, x, mem = machine(vlen)
    vmax = vlmax(vlen, sew, lmul)
    vl = setvl(u, x, mem, sew, lmul, max(1, vmax - 1))
    eb = sew // 8
    mem.buf[:vmax * eb] = _pattern(vmax * eb)
    x.write(A0, mem.base)
    fill(u, 8, sew, [0xAB] * vmax)
    r = u.execute(vmem(True, sew, 8, A0), x, mem)
    assert r.dirty and r.cycles >= 1
    got = u.v[8 * u.vlenb:8 * u.vlenb + vmax * eb]
    assert got[:vl * eb] == mem.buf[:vl * eb]
    assert u.elements(8, sew, vmax)[vl:] == [0xAB] * (vmax - vl)      # tail undisturbed
    # store back elsewhere
    x.write(A1, mem.base + 0x2000)
    r = u.execute(vmem(False, sew, 8, A1), x, mem)
    assert not r.dirty
    assert mem.buf[0x2000:0x2000 + vl * eb] == mem.buf[:vl * eb]
    assert mem.buf[0x2000 + vl * eb:0x2000 + vmax * eb] == bytes((vmax - vl) * eb)


@pytest.mark.parametrize("eew", [8, 16, 32, 64])
def test_eew_differs_from_sew(eew: int) -> None:
    u, x, mem = machine(256)
    setvl(u, x, mem, 16, 1, 8)                # EMUL = EEW/16
    mem.buf[:64] = _pattern(64)
    x.write(A0, mem.base)
    u.execute(vmem(True, eew, 8, A0), x, mem)
    assert bytes(u.v[8 * 32:8 * 32 + 8 * eew // 8]) == mem.buf[:8 * eew // 8]


def test_emul_out_of_range_and_misaligned() -> None:
    u, x, mem = machine(256)
    setvl(u, x, mem, 8, 8)                    # vle64 would need EMUL=64
    with pytest.raises(IllegalInstruction, match="vle64.v"):
        u.execute(vmem(True, 64, 8, A0), x, mem)
    setvl(u, x, mem, 8, 2)
    with pytest.raises(IllegalInstruction, match="vle8.v.*aligned"):
        u.execute(vmem(True, 8, 9, A0), x, mem)
    with pytest.raises(IllegalInstruction, match="vle8.v.*v0"):
        u.execute(vmem(True, 8, 0, A0, vm=False), x, mem)


def test_masked_load_store_skips_inactive_faulting_elements() -> None:
    u, x, mem = machine(128)
    setvl(u, x, mem, 32, 1)                   # 4 elements
    fill(u, 0, 8, [0b0101])
    mem.buf[:16] = _pattern(16)
    mem.faults = {mem.base + 4, mem.base + 12}    # elements 1 and 3 fault, but are inactive
    x.write(A0, mem.base)
    fill(u, 8, 32, [0xEEEEEEEE] * 4)
    u.execute(vmem(True, 32, 8, A0, vm=False), x, mem)
    words = [int.from_bytes(mem.buf[i * 4:i * 4 + 4], "little") for i in range(4)]
    assert u.elements(8, 32) == [words[0], 0xEEEEEEEE, words[2], 0xEEEEEEEE]
    x.write(A1, mem.base + 0x100)
    mem.faults = {mem.base + 0x104}
    u.execute(vmem(False, 32, 8, A1, vm=False), x, mem)
    assert mem.buf[0x100:0x110] == mem.buf[0:4] + bytes(4) + mem.buf[8:12] + bytes(4)


@pytest.mark.parametrize("store", [False, True])
@pytest.mark.parametrize("sew,lmul", [(8, 1), (32, 2), (64, 8), (16, 0.5)])
def test_fault_sets_vstart_and_resume(store: bool, sew: int, lmul: float) -> None:
    u, x, mem = machine(256)
    vl = setvl(u, x, mem, sew, lmul)
    eb = sew // 8
    k = vl // 2 + 1                           # faulting element
    mem.buf[:vl * eb] = _pattern(vl * eb)
    mem.faults = {mem.base + k * eb + eb - 1}
    x.write(A0, mem.base)
    fill(u, 8, sew, list(range(100, 100 + vl)))
    before = bytes(u.v)
    with pytest.raises(MemoryFault):
        u.execute(vmem(not store, sew, 8, A0), x, mem)
    assert u.vstart == k
    if store:
        assert mem.buf[:k * eb] == bytes(u.v[8 * u.vlenb:8 * u.vlenb + k * eb])  # done
        assert mem.buf[k * eb:vl * eb] == _pattern(vl * eb)[k * eb:]          # not yet
    else:
        assert u.v[8 * u.vlenb:8 * u.vlenb + k * eb] == mem.buf[:k * eb]
        assert u.v[8 * u.vlenb + k * eb:] == before[8 * u.vlenb + k * eb:]
    # the kernel fixes the fault and restarts the instruction at vstart
    mem.faults.clear()
    u.execute(vmem(not store, sew, 8, A0), x, mem)
    assert u.vstart == 0
    assert mem.buf[:vl * eb] == bytes(u.v[8 * u.vlenb:8 * u.vlenb + vl * eb])


def test_store_bulk_fault_on_later_page_is_precise() -> None:
    u, x, mem = machine(1024)
    setvl(u, x, mem, 64, 8)                   # 128 elements x 8 bytes = 1 KiB
    x.write(A0, mem.base + 0x1000 - 16)       # spans a page boundary after 2 elements
    mem.faults = {mem.base + 0x1000 + 40}
    fill(u, 8, 64, list(range(1, 129)))
    with pytest.raises(MemoryFault):
        u.execute(vmem(False, 64, 8, A0), x, mem)
    assert u.vstart == 2 + 5
    got = [int.from_bytes(mem.buf[0x1000 - 16 + 8 * i:0x1000 - 8 + 8 * i], "little")
           for i in range(8)]
    assert got == [1, 2, 3, 4, 5, 6, 7, 0]


@pytest.mark.parametrize("sew", [8, 16, 32, 64])
def test_strided(sew: int) -> None:
    u, x, mem = machine(256)
    vl = setvl(u, x, mem, sew, 1, 5)
    eb = sew // 8
    mem.buf[:0x400] = _pattern(0x400)
    for stride in (0, eb, 3 * eb + 1, -2 * eb):
        x.write(A0, mem.base + 0x200)
        x.write(A1, stride & ((1 << 64) - 1))
        u.execute(vmem(True, sew, 8, A0, mop=2, sub=A1), x, mem)
        for i in range(vl):
            a = 0x200 + i * stride
            assert u.elements(8, sew)[i] == int.from_bytes(mem.buf[a:a + eb], "little")
        x.write(A0, mem.base + 0x3000)
        u.execute(vmem(False, sew, 8, A0, mop=2, sub=A1), x, mem)
        for i in range(vl if stride else 1):
            a = 0x3000 + i * stride
            want = u.elements(8, sew)[i if stride else vl - 1]
            assert int.from_bytes(mem.buf[a:a + eb], "little") == want


def test_strided_fault_vstart() -> None:
    u, x, mem = machine(128)
    setvl(u, x, mem, 32, 1)
    x.write(A0, mem.base)
    x.write(A1, 0x1000)
    mem.faults = {mem.base + 0x2000}
    with pytest.raises(MemoryFault):
        u.execute(vmem(True, 32, 8, A0, mop=2, sub=A1), x, mem)
    assert u.vstart == 2


def test_vlm_vsm() -> None:
    u, x, mem = machine(256)
    setvl(u, x, mem, 8, 1, 19)                # 3 bytes
    mem.buf[:4] = b"\x12\x34\x56\x78"
    x.write(A0, mem.base)
    u.write_vreg(1, b"\xff" * 32)
    u.execute(vmem(True, 8, 1, A0, sub=0b01011), x, mem)
    assert u.read_vreg(1)[:4] == b"\x12\x34\x56\xff"
    x.write(A0, mem.base + 0x100)
    u.execute(vmem(False, 8, 1, A0, sub=0b01011), x, mem)
    assert mem.buf[0x100:0x104] == b"\x12\x34\x56\x00"


@pytest.mark.parametrize("nregs", [1, 2, 4, 8])
@pytest.mark.parametrize("eew", [8, 64])
def test_whole_register(nregs: int, eew: int) -> None:
    u, x, mem = machine(128)                  # vtype is vill after reset: still allowed
    n = nregs * u.vlenb
    mem.buf[:n] = _pattern(n)
    x.write(A0, mem.base)
    u.execute(vmem(True, eew, 8, A0, sub=0b01000, nf=nregs - 1), x, mem)
    assert bytes(u.v[8 * u.vlenb:8 * u.vlenb + n]) == mem.buf[:n]
    x.write(A0, mem.base + 0x1000)
    u.execute(vmem(False, 8, 8, A0, sub=0b01000, nf=nregs - 1), x, mem)
    assert mem.buf[0x1000:0x1000 + n] == mem.buf[:n]
    if nregs > 1:
        with pytest.raises(IllegalInstruction, match="aligned"):
            u.execute(vmem(True, eew, 9, A0, sub=0b01000, nf=nregs - 1), x, mem)


def test_whole_register_reserved_forms() -> None:
    u, x, mem = machine(128)
    with pytest.raises(IllegalInstruction, match="reserved"):
        u.execute(vmem(True, 8, 8, A0, sub=0b01000, nf=2), x, mem)         # 3 registers
    with pytest.raises(IllegalInstruction, match="reserved"):
        u.execute(vmem(False, 32, 8, A0, sub=0b01000, nf=0), x, mem)       # vs1r with EEW 32


def test_fault_only_first() -> None:
    u, x, mem = machine(128)
    setvl(u, x, mem, 32, 1)
    mem.buf[:16] = _pattern(16)
    x.write(A0, mem.base + len(mem.buf) - 8)  # elements 2,3 fall outside memory
    mem.buf[-8:] = b"abcdefgh"
    u.execute(vmem(True, 32, 8, A0, sub=0b10000), x, mem)
    assert u.vl == 2 and u.vstart == 0
    assert u.read_vreg(8)[:8] == b"abcdefgh"
    setvl(u, x, mem, 32, 1)
    x.write(A0, mem.base - 4)                 # element 0 faults: a real trap
    with pytest.raises(MemoryFault):
        u.execute(vmem(True, 32, 8, A0, sub=0b10000), x, mem)
    assert u.vl == 4 and u.vstart == 0
