"""arm64 SVE state through signals, under every ``arm64-sve`` policy and SVE VL 128-2048.

Reference: arch/arm64/kernel/signal.c (setup_sigframe_layout, preserve_sve_context,
restore_sve_fpsimd_context, the extra_context rules of __sigframe_alloc) and fpsimd.c
(fpsimd_signal_preserve_current_state; a syscall keeps only the FPSIMD subset).  QEMU-user
always writes SVE registers, which a real kernel does not, so the kernel source is the oracle.

guest_asm/arm64/sig_sve.S takes a SIGSEGV (a fault: outside a syscall) and a SIGUSR1 from
kill(getpid()) (on syscall return) with z1 = 5, records each frame's sve_context, sets z1 = 9
in the handler and stores z1 after each rt_sigreturn.
"""
from __future__ import annotations

import itertools
import struct

import pytest

from emukern.api import Machine
from emukern.kernel.arch.arm64.signal import setup_sigframe_layout, signal_minsigstksz, sve_sig_context_size
from emukern.pytest_plugin import GUEST_ASM

POLICIES = ["legacy", "p1", "p1+p2"]
VLS = [128, 256, 512, 1024, 2048]
GRID = list(itertools.product(POLICIES, VLS))


def run(policy: str, vl: int):
    m = Machine(arch="arm64", sve_vl=vl, sve_vls=sorted({128, 256, 512, vl}), policies={"arm64-sve": policy})
    r = m.load(GUEST_ASM / "arm64" / "sig_sve.S").run()
    assert r.exit_status == 0, (r.message, r.fault)
    v = struct.unpack("<20Q", m.read(m.symbol("res"), 160))
    keys = ("size", "vl", "z0", "ztop", "extra", "esr", "fault_addr", "fpsimd_first")
    segv, usr1 = dict(zip(keys, v[0:8])), dict(zip(keys, v[8:16]))
    return r, m, segv, usr1, v[16:18], v[18:20]


@pytest.mark.parametrize("policy,vl", GRID, ids=[f"{p}-vl{v}" for p, v in GRID])
def test_sve_record_and_tif_sve(policy, vl):
    r, m, segv, usr1, after_segv, after_usr1 = run(policy, vl)
    vq = vl // 128
    # a fault outside a syscall: TIF_SVE and SVE-form state, so the record carries registers
    assert segv["fpsimd_first"] == 1
    assert segv["vl"] == vl // 8
    assert segv["size"] == (sve_sig_context_size(vq) + 15) & ~15
    assert segv["z0"] == 5 and segv["ztop"] == 5
    assert segv["fault_addr"] == 8 and segv["esr"] >> 26 == 0x24          # data abort from EL0
    # the records outgrow __reserved from VL 1024 on: extra_context
    assert segv["extra"] == (1 if vl >= 1024 else 0)
    # rt_sigreturn restored the SVE record (the handler's z1 = 9 is gone), TIF_SVE kept
    assert after_segv == (5, 5)
    # kill() is a syscall: the state is saved FPSIMD-only and the record is the bare header
    assert usr1["size"] == 16 and usr1["vl"] == vl // 8 and usr1["extra"] == 0
    # thread.fault_code is not cleared after a delivery (Linux keeps it): esr_context again
    assert usr1["esr"] == segv["esr"]
    # ... and rt_sigreturn with a header-only record clears TIF_SVE: the next SVE instruction
    # traps again (2 SVE access traps in all), and Z1 comes back from the FPSIMD view
    assert r.traps["sve-access"] == 2
    assert after_usr1 == (5, 0 if vl > 128 else 5)
    th = m.kernel.init_task.thread
    assert th.tif_sve          # set again by that trap


def test_trace_lines():
    r, m, *_ = run("p1+p2", 1024)
    segv = next(t for t in m.trap_log if t.kind == "mem-fault")
    assert "deliver SIGSEGV" in segv.decision and "SVE record with registers" in segv.decision
    assert "extra_context" in segv.decision
    rets = [t for t in m.trap_log if t.handler == "rt_sigreturn"]
    assert "SVE state restored, TIF_SVE set" in rets[0].decision
    assert "TIF_SVE cleared" in rets[1].decision


@pytest.mark.parametrize("vl", VLS)
def test_minsigstksz_covers_the_largest_frame(vl):
    """AT_MINSIGSTKSZ = the frame with every record at the largest VL + the frame record."""
    m = Machine(arch="arm64", sve_vl=128, sve_vls=sorted({128, vl}))
    k = m.load(GUEST_ASM / "arm64" / "hello.S").kernel
    lay, vq = setup_sigframe_layout(k, None, fault=True, add_all=True)
    assert vq == vl // 128
    want = lay.frame_size + 16 + 16
    assert signal_minsigstksz(k) == want
    # the initial stack's auxv carries it
    from emukern.loader.stack import AT_MINSIGSTKSZ
    sp = k.init_task.ctx["sp"]
    mm = k.init_task.mm
    argc = mm.read_u64(sp)
    p = sp + 8 * (argc + 2)
    while mm.read_u64(p):
        p += 8
    p += 8
    auxv = {}
    while True:
        t, v = mm.read_u64(p), mm.read_u64(p + 8)
        if t == 0:
            break
        auxv[t] = v
        p += 16
    assert auxv[AT_MINSIGSTKSZ] == want
    if vl >= 1024:
        assert want > 4688 + 32         # bigger than struct rt_sigframe: extra_context space
