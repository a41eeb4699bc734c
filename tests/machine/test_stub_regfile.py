"""The FPSIMD load performed through the register file (Arm64Cpu._fpsimd_load_regs).

``fpsimd_load_state`` (ldp q0..q31, FPSR, FPCR) is the one kernel sequence whose effect the
machine knows: while no EL0 SVE access was granted and no other sequence ran, the Z bits above 128
are zero, so the sequence's zeroing of them changes nothing and V0-V31/FPSR/FPCR can be written in
one batch.  Everything observable must be what running the sequence gives: the full SVE register
file, x0-x3 and the PC, the clock, ``stub_insns``/``stub_stats`` -- checked here against the real
run on a twin CPU, directly and from a trap hook, and on a whole guest (sig_loop.S) run both ways.
"""
from __future__ import annotations

import json
import random

import pytest

from emukern.kernel.arch.arm64 import entry_fpsimd as EF
from emukern.kernel.arch.arm64.entry_fpsimd import STUBS, SveStateArea, read_sve_state
from emukern.machine.cpu_arm64 import Arm64Cpu, KernelSeq, KERNEL_SEQ_RET
from emukern.machine.trap import TrapKind
from tests.machine.test_sve_stub import CODE, DATA, asm, make_cpu

VLS = (128, 256, 512, 2048)


def _slot(seed: int) -> tuple[SveStateArea, int, list[bytes], int, int]:
    r = random.Random(seed)
    a = SveStateArea(slots=2)
    slot = a.alloc()
    v = [r.randbytes(16) for _ in range(32)]
    fpsr, fpcr = 0x8000009F & r.getrandbits(32), r.getrandbits(2) << 22
    a.write(slot + a.fp_off, b"".join(v) + fpsr.to_bytes(4, "little") + fpcr.to_bytes(4, "little"))
    return a, slot, v, fpsr, fpcr


def _observed(cpu: Arm64Cpu) -> dict:
    return {"now": cpu.now, "insns": cpu.insns, "stub_insns": cpu.stub_insns,
            "stats": dict(cpu.stub_stats), "cycles": dict(cpu.stub_cycles),
            "x": [cpu.reg(i) for i in range(4)], "pc": cpu.get_pc()}


def _no_stub_run(cpu: Arm64Cpu, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(op):   # pragma: no cover - only reached when the fast path was not taken
        raise AssertionError(f"stub {op.name} ran on the CPU instead of through the register file")
    monkeypatch.setattr(cpu, "_stub_prepare", boom)


@pytest.mark.parametrize("vl", VLS)
def test_regfile_load_equals_running_the_sequence(vl, monkeypatch):
    fast, real = make_cpu(vl), make_cpu(vl)
    real._zhi_clean = False                 # the twin must run the instructions
    for cpu in (fast, real):
        for i, v in enumerate((0x11, 0x22, 0x33, 0x44)):
            cpu.set_reg(i, v)
    a, slot, v, fpsr, fpcr = _slot(vl)
    _no_stub_run(fast, monkeypatch)
    for cpu in (fast, real):
        EF.run(cpu, "fpsimd_load_state", a, slot)
    obs_fast, obs_real = _observed(fast), _observed(real)
    assert obs_fast == obs_real
    assert obs_fast["stats"] == {"fpsimd_load_state": 1}
    assert obs_fast["cycles"]["fpsimd_load_state"] == STUBS["fpsimd_load_state"][1]
    monkeypatch.undo()
    got_fast, got_real = read_sve_state(fast), read_sve_state(real)
    assert got_fast == got_real
    assert got_fast["z"] == [x + bytes(vl // 8 - 16) for x in v]
    assert (got_fast["fpsr"], got_fast["fpcr"]) == (fpsr, fpcr)


_HOOK_GUEST = """
    mov x0, #11
    mov x1, #22
    mov x2, #33
    mov x3, #44
    svc #0
    mov x9, #0x200000
    stp q0, q1, [x9]
    stp q30, q31, [x9, #32]
    stp x0, x1, [x9, #64]
    stp x2, x3, [x9, #80]
    mrs x4, fpcr
    str x4, [x9, #96]
    brk #1
"""


@pytest.mark.parametrize("vl", (128, 512))
def test_regfile_load_from_a_trap_hook(vl, monkeypatch):
    """Queued in a syscall hook (the rt_sigreturn case): done before the next user instruction,
    with the user's x0-x3 and return value intact and the same clock as the stub chain."""
    a, slot, v, _fpsr, fpcr = _slot(7)
    runs = {}
    for mode in ("fast", "real"):
        cpu = make_cpu(vl, asm(_HOOK_GUEST))
        if mode == "real":
            cpu._zhi_clean = False
        else:
            _no_stub_run(cpu, monkeypatch)

        def on_trap(c, trap):
            if trap.kind is TrapKind.SYSCALL:
                c.set_reg(0, 1234)
                EF.queue(c, "fpsimd_load_state", a, slot)
            else:
                c.stop()
        cpu.on_trap = on_trap
        cpu.run(10**6)
        runs[mode] = (cpu.mm.read(DATA, 104), _observed(cpu))
        monkeypatch.undo()
    assert runs["fast"] == runs["real"]
    mem = runs["fast"][0]
    assert mem[:32] == v[0] + v[1] and mem[32:64] == v[30] + v[31]
    assert [int.from_bytes(mem[64 + 8 * i:72 + 8 * i], "little") for i in range(4)] == [1234, 22, 33, 44]
    assert int.from_bytes(mem[96:104], "little") == fpcr


def test_sve_use_disables_the_regfile_load():
    """Once EL0 may write Z above 128 bits, the load runs on the CPU and zeroes them."""
    cpu = make_cpu(512, asm("index z7.b, #1, #1\nsvc #0\nbrk #1"))
    cpu.set_sve_el0(True)
    a, slot, v, _fpsr, _fpcr = _slot(3)

    def on_trap(c, trap):
        if trap.kind is TrapKind.SYSCALL:
            EF.queue(c, "fpsimd_load_state", a, slot)
        else:
            c.stop()
    cpu.on_trap = on_trap
    cpu.run(10**6)
    assert cpu._zhi_clean is False
    assert read_sve_state(cpu)["z"] == [x + bytes(48) for x in v]


def test_regfile_load_flag_is_checked_against_the_words():
    cpu = Arm64Cpu(0, __import__("emukern.machine.clock", fromlist=["Clock"]).Clock(), sve_vl=128)
    nop, ret = (0xD503201F).to_bytes(4, "little"), KERNEL_SEQ_RET.to_bytes(4, "little")
    with pytest.raises(ValueError, match="not the FPSIMD load sequence"):
        cpu.install_kernel_text(nop + ret, {"fake": KernelSeq(0, 2, loads=True, regfile_load=True)})


@pytest.mark.parametrize("policy", ("legacy", "p1+p2"))
def test_signal_loop_same_with_and_without_regfile_load(run_guest, guest_asm, policy, monkeypatch):
    """sig_loop.S (one fpsimd_load_state after every rt_sigreturn): identical summary, trap log
    and stub accounting whether the load goes through the register file or runs."""
    out = {}
    for mode in ("fast", "real"):
        if mode == "real":
            monkeypatch.setattr(Arm64Cpu, "_regfile_ok", lambda self, op: False)
        r, m = run_guest(guest_asm / "arm64" / "sig_loop.S", argv=["50"], policies={"arm64-sve": policy})
        assert r.exit_status == 0 and r.syscalls["rt_sigreturn"] == 50
        cpu = m.cpu(0)
        out[mode] = (json.dumps(r.to_json(), sort_keys=True, default=str), dict(cpu.stub_stats),
                     dict(cpu.stub_cycles), [str(t) for t in m.kernel.trap_log])
        monkeypatch.undo()
    assert out["fast"] == out["real"]
    assert out["fast"][1]["fpsimd_load_state"] == 51


@pytest.mark.parametrize("vl", VLS)
def test_regfile_save_equals_running_the_sequence(vl, monkeypatch):
    """``fpsimd_save_state`` (stp q0..q31, FPSR, FPCR: the save of every switch away from a task
    with live FP state) performed through the register file: the same slot bytes (the bounce
    buffer's stale rest copied out too), clock, stub counts, x0-x3 and PC as running it, with
    Z bits above 128 set (a save needs no condition on them) and after a load went first."""
    fast, real = make_cpu(vl), make_cpu(vl)
    real._regfile_ok = lambda op: False     # type: ignore[method-assign]  # the twin runs it
    a0, slot0, *_ = _slot(vl + 1)
    for cpu in (fast, real):
        for i, v in enumerate((0x11, 0x22, 0x33, 0x44)):
            cpu.set_reg(i, v)
        EF.run(cpu, "fpsimd_load_state", a0, slot0)     # (leaves the bounce buffer non-zero)
    a, slot, *_ = _slot(vl + 2)
    _no_stub_run(fast, monkeypatch)
    for cpu in (fast, real):
        EF.run(cpu, "fpsimd_save_state", a, slot)
        EF.run(cpu, "fpsimd_save_state", a, slot)
    assert _observed(fast) == _observed(real)
    assert _observed(fast)["stats"] == {"fpsimd_load_state": 1, "fpsimd_save_state": 2}
    assert bytes(a.view(slot)) != bytes(a.slot_size)
    monkeypatch.undo()
    slots = []
    for cpu in (fast, real):
        b = SveStateArea(slots=1)
        s = b.alloc()
        EF.run(cpu, "fpsimd_save_state", b, s)
        slots.append(bytes(b.view(s)))
    assert slots[0] == slots[1]
    assert read_sve_state(fast) == read_sve_state(real)


def test_regfile_save_is_found_by_its_words():
    """Only the exact FPSIMD save words are performed without running them, whatever the name."""
    cpu = Arm64Cpu(0, __import__("emukern.machine.clock", fromlist=["Clock"]).Clock(), sve_vl=128)
    nop, ret = (0xD503201F).to_bytes(4, "little"), KERNEL_SEQ_RET.to_bytes(4, "little")
    cpu.install_kernel_text(nop + ret, {"fpsimd_save_state": KernelSeq(0, 2, saves=True)})
    assert cpu._seqs["fpsimd_save_state"][5] is False
    assert make_cpu(128)._seqs["fpsimd_save_state"][5] is True


@pytest.mark.parametrize("el0_sve_after", [False, True])
@pytest.mark.parametrize("where", ["hook", "stub_sync"])
def test_flush_makes_the_following_load_a_regfile_load(where, el0_sve_after, monkeypatch):
    """sve_flush_live zeroes Z above 128 on every register (its mov v writes are AdvSIMD), so an
    FPSIMD load queued after it -- a switch away from a TIF_SVE task blocked in a syscall --
    goes through the register file even though EL0 wrote those bits before; the result is the
    twin's that runs the load (a CPU that classifies no sequence), and the bits are known zero
    afterwards only while EL0 cannot use SVE."""
    a, slot, v, _fpsr, _fpcr = _slot(11)
    runs = {}
    for mode in ("fast", "real"):
        cpu = make_cpu(512, asm("index z7.b, #1, #1\nsvc #0\nbrk #1"))
        cpu.set_sve_el0(True)
        loads = []
        if mode == "real":
            cpu._zhi_effect = {}
        else:
            real_load = cpu._fpsimd_load_regs
            monkeypatch.setattr(cpu, "_fpsimd_load_regs", lambda op: (loads.append(op.name), real_load(op)))

        def on_trap(c, trap):
            if trap.kind is TrapKind.SYSCALL:
                EF.queue(c, "sve_flush_live")
                EF.queue(c, "fpsimd_load_state", a, slot)
                c.set_sve_el0(el0_sve_after)
                if where == "stub_sync":
                    c.stub_sync()
            else:
                c.stop()
        cpu.on_trap = on_trap
        cpu.run(10**6)
        assert cpu._zhi_clean is (mode == "fast" and not el0_sve_after)
        runs[mode] = (_observed(cpu), read_sve_state(cpu))
        if mode == "fast":
            assert loads == ["fpsimd_load_state"]
        monkeypatch.undo()
    assert runs["fast"] == runs["real"]
    assert runs["fast"][1]["z"] == [x + bytes(48) for x in v]
    assert runs["fast"][0]["stats"] == {"sve_flush_live": 1, "fpsimd_load_state": 1}


def test_sequences_are_classified_by_their_words():
    from emukern.kernel.arch.arm64.entry_fpsimd import STUB_WORDS
    from emukern.machine.cpu_arm64 import ZHI_KEEP, ZHI_ZERO, zhi_effect
    assert {k: zhi_effect(w) for k, w in STUB_WORDS.items()} == {
        "sve_save_state": None, "sve_load_state": None, "fpsimd_save_state": None,
        "sve_flush_live": ZHI_ZERO, "fpsimd_load_state": ZHI_ZERO, "sve_flush_p": ZHI_KEEP}
    # a flush that leaves one V register out does not zero every Z register
    assert zhi_effect(STUB_WORDS["sve_flush_live"][1:]) is None
