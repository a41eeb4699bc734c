"""The Python API for the vector state (emukern.api.Machine.cpu(n)): a guest leaves known values
in its vector registers and spins until the run's instruction budget stops it; the CPU's
accessors then read exactly those bytes, at several RVV VLENs and SVE vector lengths, and a
write through them is what the next read (and a guest store) sees."""
from __future__ import annotations

import struct

import pytest

from emukern.api import Machine

# the guest spins on its last instruction: the budget ends the run with the registers live
SPIN_BUDGET = 20_000

RV_GUEST = """# arch: riscv64
.globl _start
_start:
    la a0, pattern
    vsetvli t0, zero, e32, m1, ta, ma
    vle32.v v1, (a0)            # v1: the pattern's first VLENB bytes
    vid.v v2                    # v2: 0, 1, 2, ... as e32
    vadd.vi v3, v2, 7           # v3: 7, 8, 9, ...
    vmv.v.i v31, -1             # v31: all ones
    vsetivli zero, 3, e16, m2, tu, mu   # vl 3, vtype e16 m2 tu mu
1:  j 1b
.data
.balign 16
pattern:
    .rept 64
    .byte 0
    .endr
"""


def _rv_pattern() -> bytes:
    return bytes((37 * i + 11) & 0xFF for i in range(64))


def _rv_machine(vlen: int, tmp_path) -> Machine:
    src = tmp_path / "vstate.S"
    body = RV_GUEST.replace("    .rept 64\n    .byte 0\n    .endr\n",
                            "    .byte " + ", ".join(str(b) for b in _rv_pattern()) + "\n")
    src.write_text(body)
    m = Machine(arch="riscv64", vlen=vlen, max_insns=SPIN_BUDGET).load(src)
    r = m.run()
    assert r.stop_reason == "budget", r
    return m


@pytest.mark.parametrize("vlen", [128, 256, 512])
def test_rvv_accessors_read_what_the_guest_left(vlen, tmp_path):
    m = _rv_machine(vlen, tmp_path)
    cpu = m.cpu(0)
    vlenb = vlen // 8
    n32 = vlenb // 4
    assert cpu.vlenb == vlenb
    assert cpu.vl == 3
    assert cpu.vtype == (0b001 << 3) | 0b001      # vsew=e16, vlmul=m2, tu, mu
    assert cpu.vstart == 0
    assert cpu.vreg(1) == _rv_pattern()[:vlenb]
    assert cpu.vreg(2) == struct.pack(f"<{n32}I", *range(n32))
    assert cpu.vreg(3) == struct.pack(f"<{n32}I", *range(7, 7 + n32))
    assert cpu.vreg(31) == b"\xff" * vlenb
    assert cpu.vreg(4) == bytes(vlenb)                  # never written
    # the accessors are the unit's registers, not a copy
    assert cpu.vreg(2) == cpu.rvv.read_vreg(2)


@pytest.mark.parametrize("vlen", [128, 512])
def test_rvv_set_vreg_round_trips_and_checks_length(vlen, tmp_path):
    m = _rv_machine(vlen, tmp_path)
    cpu = m.cpu(0)
    data = bytes(range(vlen // 8))
    cpu.set_vreg(5, data)
    assert cpu.vreg(5) == data
    cpu.set_vreg(6, data * 2)                           # a group of two: v6 and v7
    assert cpu.vreg(7) == data
    with pytest.raises(ValueError):
        cpu.set_vreg(5, data[:-1])
    with pytest.raises(ValueError):
        cpu.vreg(32)


def test_rvv_accessors_refuse_a_hart_without_v(tmp_path):
    src = tmp_path / "nov.S"
    src.write_text("# arch: riscv64\n.globl _start\n_start:\n1:  j 1b\n")
    m = Machine(arch="riscv64", has_v=False, max_insns=1000).load(src)
    m.run()
    with pytest.raises(ValueError, match="no V extension"):
        m.cpu(0).vreg(0)


SVE_GUEST = """// arch: arm64
.globl _start
_start:
    adr x0, pattern
    ptrue p0.b
    ld1b {z1.b}, p0/z, [x0]     // z1: the pattern's first VL/8 bytes
    index z2.s, #0, #1          // z2: 0, 1, 2, ... as .s
    mov x2, #100
    index z3.d, x2, #-3         // z3: 100, 97, 94, ... as .d
    ptrue p1.s                  // p1: every 4th bit
    mov x1, #3
    whilelo p2.h, xzr, x1       // p2: the first three .h elements
    pfalse p3.b
    setffr                      // FFR: all true
    mov z4.b, #-1               // z4: all ones
1:  b 1b
.data
.balign 16
pattern:
    .byte {pattern}
"""


def _sve_pattern() -> bytes:
    return bytes((29 * i + 5) & 0xFF for i in range(256))


def _sve_machine(vl: int, tmp_path) -> Machine:
    src = tmp_path / "svestate.S"
    src.write_text(SVE_GUEST.replace("{pattern}", ", ".join(str(b) for b in _sve_pattern())))
    m = Machine(arch="arm64", sve_vl=vl, max_insns=SPIN_BUDGET).load(src)
    r = m.run()
    assert r.stop_reason == "budget", r
    return m


def _bits(active: list[int], nbytes: int) -> bytes:
    """A predicate of ``nbytes`` bytes with the bits ``active`` set."""
    v = 0
    for b in active:
        v |= 1 << b
    return v.to_bytes(nbytes, "little")


@pytest.mark.parametrize("vl", [128, 256, 512])
def test_sve_accessors_read_what_the_guest_left(vl, tmp_path):
    m = _sve_machine(vl, tmp_path)
    cpu = m.cpu(0)
    vb, pb = vl // 8, vl // 64
    assert cpu.sve_vl == vl
    assert cpu.sve_z(1) == _sve_pattern()[:vb]
    assert cpu.sve_z(2) == struct.pack(f"<{vb // 4}I", *range(vb // 4))
    assert cpu.sve_z(3) == struct.pack(f"<{vb // 8}q", *range(100, 100 - 3 * (vb // 8), -3))
    assert cpu.sve_z(4) == b"\xff" * vb
    assert cpu.sve_z(5) == bytes(vb)
    assert cpu.sve_p(0) == b"\xff" * pb
    assert cpu.sve_p(1) == _bits(list(range(0, vb, 4)), pb)
    assert cpu.sve_p(2) == _bits([0, 2, 4], pb)
    assert cpu.sve_p(3) == bytes(pb)
    assert cpu.sve_ffr() == b"\xff" * pb
    # the low 128 bits of Z are V, which Unicorn reads directly
    assert cpu.sve_z(2)[:16] == cpu.save_fp()["v"][2].to_bytes(16, "little")
    st = cpu.sve_state()
    assert st["vl"] == vl and st["z"][1] == cpu.sve_z(1) and st["p"][2] == cpu.sve_p(2)


@pytest.mark.parametrize("vl", [128, 512])
def test_sve_writes_round_trip_and_leave_the_clock(vl, tmp_path):
    m = _sve_machine(vl, tmp_path)
    cpu = m.cpu(0)
    vb, pb = vl // 8, vl // 64
    before = (cpu.now, cpu.insns)
    z1 = cpu.sve_z(1)
    cpu.set_sve_z(7, bytes(range(vb)))
    cpu.set_sve_p(5, _bits([1, 3], pb))
    cpu.set_sve_ffr(bytes(pb))
    assert cpu.sve_z(7) == bytes(range(vb))
    assert cpu.sve_p(5) == _bits([1, 3], pb)
    assert cpu.sve_ffr() == bytes(pb)
    assert cpu.sve_z(1) == z1                          # the others keep their values
    assert (cpu.now, cpu.insns) == before              # an inspection, not kernel work
    with pytest.raises(ValueError, match="takes"):
        cpu.set_sve_z(0, bytes(vb + 1))
    with pytest.raises(ValueError):
        cpu.sve_p(16)


def test_sve_accessors_through_the_run_guest_fixture(run_guest):
    r, m = run_guest("""
    .globl _start
    _start:
        index z9.b, #1, #1
    1:  b 1b""", arch="arm64", sve_vl=256, max_insns=5000)
    assert r.stop_reason == "budget"
    assert m.cpu(0).sve_z(9) == bytes(range(1, 33))
