"""The RISC-V V state through a signal delivered on syscall return, under every combination of
"riscv: vector: treat VS_INITIAL as discard" (Andy Chiu; ``riscv-discard`` eager = before,
deferred = after) and the ``abi.riscv_v_vstate_discard`` knob, at VLEN 128-1024.

Reference: arch/riscv/kernel/signal.c (setup_sigcontext -> save_v_state, restore_sigcontext ->
__restore_v_state) and asm/vector.h (riscv_v_vstate_save saves only a Dirty context,
riscv_v_vstate_set_restore).  QEMU-user 7.2 writes no V record, so the kernel source is the
oracle here.  The guest (guest_asm/riscv/sig_vstate.S) sets v1 = 5, kill()s itself, records the
frame's V record from its handler, sets v1 = 9, returns, and stores v1 after rt_sigreturn.
"""
from __future__ import annotations

import itertools
import struct

import pytest

from emukern.api import Machine
from emukern.pytest_plugin import GUEST_ASM

RISCV_V_MAGIC = 0x53465457
GRID = list(itertools.product(["eager", "deferred"], [0, 1], [128, 256, 512, 1024]))


def run(policy: str, knob: int, vlen: int):
    m = Machine(arch="riscv64", vlen=vlen, policies={"riscv-discard": policy},
                sysctls={"abi.riscv_v_vstate_discard": str(knob)})
    r = m.load(GUEST_ASM / "riscv" / "sig_vstate.S").run()
    assert r.exit_status == 0, (r.message, r.fault)
    keys = ("magic", "size", "vl", "vlenb", "after", "frame_v1", "sig", "info_uc", "end")
    return r, m, dict(zip(keys, struct.unpack("<9Q", m.read(m.symbol("res"), 72))))


@pytest.mark.parametrize("policy,knob,vlen", GRID, ids=[f"{p}-discard{k}-vlen{v}" for p, k, v in GRID])
def test_v_record_and_state_after_sigreturn(policy, knob, vlen):
    r, m, res = run(policy, knob, vlen)
    vlenb = vlen // 8
    # the record: RISCV_V_MAGIC, header + __riscv_v_ext_state + 32 registers, then END (0, 0)
    assert res["magic"] == RISCV_V_MAGIC
    assert res["size"] == 8 + 48 + 32 * vlenb
    assert res["vlenb"] == vlenb
    assert res["end"] == 0
    assert res["sig"] == 10 and res["info_uc"] == 1
    if policy == "eager":
        # entry marked the context Dirty, so save_v_state saved the live registers: the frame
        # has v1 = 5 (knob 0) or the clobber (knob 1: all ones, vl 0 after vsetvl with vill)
        assert res["frame_v1"] == (0xFF if knob else 5)
        assert res["vl"] == (0 if knob else vlenb)
    else:
        # deferred: VS=Initial on syscall return, riscv_v_vstate_save saves nothing, and the
        # record is the last *saved* context: here the zeroed first-use context
        assert res["frame_v1"] == 0 and res["vl"] == 0
    # rt_sigreturn reloads exactly what the frame holds (the handler's v1 = 9 is gone)
    assert res["after"] == res["frame_v1"]
    # knob 0 promises the registers survive syscalls: kept by eager, broken by deferred
    if knob == 0:
        assert (res["after"] == 5) == (policy == "eager")


@pytest.mark.parametrize("policy,knob", list(itertools.product(["eager", "deferred"], [0, 1])))
def test_trace_shows_the_decisions(policy, knob):
    r, m, _ = run(policy, knob, 256)
    kill = next(t for t in m.trap_log if t.handler == "kill")
    ret = next(t for t in m.trap_log if t.handler == "rt_sigreturn")
    assert "deliver SIGUSR1" in kill.decision
    if policy == "eager":
        assert "riscv_v_vstate_save saved Dirty context" in kill.decision
        assert "riscv_v_vstate_set_restore: VS=Initial" in ret.decision
    else:
        assert "VS=Initial: riscv_v_vstate_save not saved" in kill.decision
        assert "riscv_v_vstate_set_restore: VS=Clean" in ret.decision
    assert "restored from memory" in ret.decision


def test_no_v_record_when_v_is_off(run_guest):
    """A task that never used V (VS=Off) gets no V record: END directly after sc_fpregs."""
    src = (GUEST_ASM / "riscv" / "sig_vstate.S").read_text()
    src = src.replace("    vsetvli t0, x0, e8, m1, ta, ma      # first use: traps, zeroed context\n"
                      "    vmv.v.i v1, 5\n", "")
    src = src.split("handler:")[0].replace(
        "    vsetvli t0, x0, e8, m1, ta, ma      # (vl may be 0 / vill after a discard)\n"
        "    la t1, after\n    vse8.v v1, (t1)\n", "    la t1, after\n") + "handler:" + \
        src.split("handler:")[1].replace("    vsetvli t0, x0, e8, m1, ta, ma\n    vmv.v.i v1, 9\n", "")
    r, m = run_guest(src, arch="riscv64")
    assert r.exit_status == 0, (r.message, r.fault)
    magic, size = struct.unpack("<2Q", m.read(m.symbol("res"), 16))
    assert magic == 0 and size == 0          # END_MAGIC, END_HDR_SIZE
    assert m.kernel.init_task.thread.v.stats["first_use"] == 0
