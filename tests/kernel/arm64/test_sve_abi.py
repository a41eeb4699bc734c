"""Seed 004 / issue 7: the arm64 SVE ABI under every arm64-sve policy and VL 128/256/512.

Reference: Documentation/arch/arm64/sve.rst ("System call behaviour", prctl), arch/arm64/kernel/
fpsimd.c (do_sve_acc, task_fpsimd_load, fpsimd_save_user_state, vec_set_vector_length) and
entry-common.c (fpsimd_syscall_enter).  Guests: guest_asm/arm64/sve_*.S.
"""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from emukern.api import Machine

GUESTS = Path(__file__).resolve().parents[3] / "guest_asm" / "arm64"
POLICIES = ("legacy", "p1", "p1+p2")
VLS = (128, 256, 512)
MATRIX = [(p, v) for p in POLICIES for v in VLS]
EINVAL = 2**64 - 22


def run(name: str, pol: str, vl: int, **cfg):
    m = Machine(arch="arm64", sve_vl=vl, policies={"arm64-sve": pol}, **cfg)
    m.load(GUESTS / name)
    return m.run(), m


def parse_dump(d: bytes) -> dict:
    vlb = int.from_bytes(d[:8], "little")
    z = [d[64 + i * vlb:64 + (i + 1) * vlb] for i in range(32)]
    pl = vlb // 8
    p = [d[2112 + i * pl:2112 + (i + 1) * pl] for i in range(17)]
    return {"vlb": vlb, "z": z, "p": p[:16], "ffr": p[16]}


@pytest.mark.parametrize("pol,vl", MATRIX)
def test_sve_syscall_abi(pol, vl):
    r, m = run("sve_syscall.S", pol, vl)
    assert r.exit_status == 0
    before, after = parse_dump(r.stdout[:4096]), parse_dump(r.stdout[4096:8192])
    assert before["vlb"] == after["vlb"] == vl // 8               # VL unchanged
    if vl > 128:
        assert any(z[16:] != bytes(len(z) - 16) for z in before["z"])   # the test means something
    assert all(p != bytes(vl // 64) for p in before["p"]) and before["ffr"] != bytes(vl // 64)
    for zb, za in zip(before["z"], after["z"]):
        assert za[:16] == zb[:16]                                # V0-V31 preserved
        assert za[16:] == bytes(vl // 8 - 16)                    # Z bits above 128 zero
    assert all(p == bytes(vl // 64) for p in after["p"])         # P0-P15 zero
    assert after["ffr"] == bytes(vl // 64)                       # FFR zero
    k = m.kernel
    assert k.trap_counts["sve-access"] == 1                       # first use traps exactly once
    assert k.sve_stats["flush_syscall"] >= 1
    flush = "sve_flush_live" if vl > 128 else "sve_flush_p"
    assert m.cpu(0).stub_stats[flush] >= 2                        # trap + syscall flushes ran on the CPU


@pytest.mark.parametrize("pol,vl", MATRIX)
def test_sve_state_survives_preemption(pol, vl):
    r, m = run("sve_preempt.S", pol, vl, freq_hz=1_000_000, hz=1000, timer_freq=1_000_000,
               timeslice_ticks=1)
    assert r.exit_status == 0, f"SVE state changed across preemption (status {r.exit_status})"
    k = m.kernel
    assert k.trap_counts["sve-access"] == 2                       # one first-use trap per process
    assert k.sve_stats["save_sve"] >= 20 and k.sve_stats["load_sve"] >= 20   # really interleaved


@pytest.mark.parametrize("pol,vl", MATRIX)
def test_sve_retrap_after_tif_sve_dropped(pol, vl):
    # 200 kHz and HZ=100: one simulated second is 200k cycles, crossed by the 400 yields
    r, m = run("sve_timeout.S", pol, vl, freq_hz=200_000, hz=100, timer_freq=200_000)
    assert r.exit_status == 0
    d = parse_dump(r.stdout[:4096])
    assert d["vlb"] == vl // 8
    for i, z in enumerate(d["z"]):                 # SVE_FILL 5: z_i.b[0] = 5 + 5i
        assert z[0] == (5 + 5 * i) & 0xFF and z[16:] == bytes(vl // 8 - 16)
    assert all(p == bytes(vl // 64) for p in d["p"]) and d["ffr"] == bytes(vl // 64)
    st = m.kernel.sve_stats
    assert st["sve_trap"] == 2 and st["retrap_after_load"] + st["drop_tif_sve_syscall"] >= 1
    if pol == "legacy":
        # the first FPSIMD-only load (after the first yield) drops TIF_SVE, no P flushes
        assert st["flush_p"] == 0 and st["load_fpsimd_tif_sve"] <= 2
    else:
        # kept for ~1 s: FPSIMD-only loads flush P/FFR only, then the timeout drops TIF_SVE
        assert st["flush_p"] >= 50 and st["drop_tif_sve_load"] + st["drop_tif_sve_syscall"] >= 1


@pytest.mark.parametrize("vl", VLS)
def test_sve_prctl_set_get_vl(vl):
    r, _ = run("sve_prctl.S", "p1+p2", vl)
    assert r.exit_status == 0
    v = struct.unpack("<16Q", r.stdout[:128])
    INHERIT = 1 << 17
    assert v[0] == vl // 8
    assert v[1] == 16 and v[2] == 16 and v[3] == 16                 # PR_SVE_SET_VL changes rdvl
    assert v[4] == EINVAL                                           # not a multiple of 16
    assert v[5] == 32 and v[6] == 32                                # 48 rounds down to 32 (256 bits)
    assert v[7] == 64                                               # clamped to the largest VL (512)
    assert v[8] == EINVAL and v[9] == EINVAL                        # VL 0, unknown flag
    assert v[10] == 16 and v[11] == 64 and v[12] == 64              # ONEXEC: current VL unchanged
    assert v[13] == 32 | INHERIT and v[14] == 32 | INHERIT
    assert v[15] == 0x1122334455667788                              # V kept across VL changes


def test_sve_policy_default_is_p1_plus_p2():
    m = Machine(arch="arm64")
    m.load(GUESTS / "sve_syscall.S")
    assert m.kernel.policy("arm64-sve") == "p1+p2"


def test_cntvct_follows_emukern_clock(run_guest):
    src = """
    .globl _start
    _start:
        mrs x1, cntfrq_el0
        mrs x2, cntvct_el0
        mov x3, #1000
    1:  subs x3, x3, #1
        b.ne 1b
        mrs x4, cntvct_el0
        sub x4, x4, x2
        adr x5, out
        stp x1, x4, [x5]
        mov x0, #1
        mov x1, x5
        mov x2, #16
        mov x8, #64
        svc #0
        mov x0, #0
        mov x8, #94
        svc #0
    .data
    out: .space 16
    """
    r, m = run_guest(src, arch="arm64", freq_hz=10_000_000, hz=100, timer_freq=10_000_000)
    frq, dt = struct.unpack("<2Q", r.stdout)
    assert frq == 10_000_000
    assert 2000 <= dt <= 2010          # 2 instructions x 1000 iterations, one tick per cycle
    assert m.kernel.clock.jiffies(10_000_000) == 100           # one simulated second = HZ jiffies


@pytest.mark.parametrize("first,second", [("legacy", "p1+p2"), ("p1+p2", "legacy"), ("p1+p2", "p1")])
def test_syscall_sve_timeout_follows_a_runtime_switch(first, second):
    """fpsimd_syscall_enter's sve_timeout test (patch 2, p1+p2 only) follows the switch set after
    boot: fpsimd.setup resolves it once and again on every change.  fp_pidbench at 200 kHz and
    HZ=100 crosses the 1 s timeout inside its TIF_SVE loops."""
    m = Machine(arch="arm64", policies={"arm64-sve": first}, freq_hz=200_000, hz=100, timer_freq=200_000)
    m.load(GUESTS / "fp_pidbench.S", ["500", "2"])
    m.kernel.policies.set("arm64-sve", second)
    assert m.run().exit_status == 0
    st = m.kernel.sve_stats
    if second == "p1+p2":
        assert st["drop_tif_sve_syscall"] >= 1 and st["sve_trap"] >= 2     # dropped, then re-trapped
    else:
        assert st["drop_tif_sve_syscall"] == 0 and st["sve_trap"] == 1
