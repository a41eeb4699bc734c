"""Kernel sequences run by :class:`emukern.machine.cpu_arm64.Arm64Cpu` (install_kernel_text,
queue_stub, stub_sync), exercised with the kernel's entry-fpsimd sequences.

Z bits above 128, P0-P15 and FFR are only reachable with real SVE instructions; the kernel's
sequences run on the CPU as stubs (queued, then run before user code or synchronously).  The
instruction words themselves are the kernel's (tests/kernel/arm64/test_entry_fpsimd.py).
"""
from __future__ import annotations

import random
import shutil

import pytest

from emukern.machine.clock import Clock
from emukern.kernel.arch.arm64 import entry_fpsimd as EF
from emukern.kernel.arch.arm64.entry_fpsimd import STUBS, SveStateArea, read_sve_state, write_sve_state
from emukern.machine.cpu_arm64 import KERNEL_SEQ_RET, Arm64Cpu, KernelSeq
from emukern.machine.memory import AddressSpace
from emukern.machine.trap import TrapKind

CODE, DATA = 0x10_0000, 0x20_0000
VLS = (128, 256, 512)


def asm(text: str) -> bytes:
    from emukern.loader.asm import assemble_snippet
    return assemble_snippet(text, "arm64")


def make_cpu(vl: int, code: bytes = b"") -> Arm64Cpu:
    cpu = Arm64Cpu(0, Clock(), sve_vl=vl)
    EF.install(cpu)
    mm = AddressSpace()
    mm.map(CODE, 0x10000, "r-x", "code", code)
    mm.map(DATA, 0x10000, "rw-", "data")
    cpu.attach_mm(mm)
    cpu.set_pc(CODE)
    cpu.enter_el0()
    return cpu


def rand_state(vl: int, seed: int) -> dict:
    r = random.Random(seed)
    vb = vl // 8
    ffr_bits = r.randrange(0, vl // 8 + 1)          # FFR is monotonic: ones then zeros
    ffr = ((1 << ffr_bits) - 1).to_bytes(vl // 64, "little")
    return {"z": [r.randbytes(vb) for _ in range(32)], "p": [r.randbytes(vl // 64) for _ in range(16)],
            "ffr": ffr, "fpsr": 0x8000009F & r.getrandbits(32), "fpcr": (r.getrandbits(2) << 22)}


@pytest.mark.parametrize("vl", VLS)
def test_sve_stub_roundtrip_and_quiet(vl):
    cpu = make_cpu(vl)
    st = rand_state(vl, vl)
    t0, s0 = cpu.now, cpu.stub_insns
    write_sve_state(cpu, st)
    got = read_sve_state(cpu)
    assert got["vl"] == vl
    assert got["z"] == st["z"] and got["p"] == st["p"] and got["ffr"] == st["ffr"]
    assert (got["fpsr"], got["fpcr"]) == (st["fpsr"], st["fpcr"])
    assert (cpu.now, cpu.stub_insns) == (t0, s0)      # inspection leaves the clock alone
    assert cpu.save_fp()["v"][5] == int.from_bytes(st["z"][5][:16], "little")


@pytest.mark.parametrize("vl", VLS)
def test_sve_stub_flush_live_and_flush_p(vl):
    cpu = make_cpu(vl)
    st = rand_state(vl, 7 + vl)
    write_sve_state(cpu, st)
    t0 = cpu.now
    cpu.run_stub("sve_flush_p")
    got = read_sve_state(cpu)
    assert got["z"] == st["z"]
    assert all(p == bytes(vl // 64) for p in got["p"]) and got["ffr"] == bytes(vl // 64)
    assert cpu.now - t0 == STUBS["sve_flush_p"][1] == cpu.stub_cycles["sve_flush_p"]
    write_sve_state(cpu, st)
    cpu.run_stub("sve_flush_live")
    got = read_sve_state(cpu)
    for i in range(32):     # mov vN.16b, vN.16b keeps V and zeroes the rest of Z
        assert got["z"][i] == st["z"][i][:16] + bytes(vl // 8 - 16)
    assert all(p == bytes(vl // 64) for p in got["p"]) and got["ffr"] == bytes(vl // 64)
    assert cpu.stub_insns == 1 + STUBS["sve_flush_p"][1] + STUBS["sve_flush_live"][1]   # + the eret


@pytest.mark.parametrize("vl", VLS)
def test_sve_stub_fpsimd_save_load(vl):
    cpu = make_cpu(vl)
    a = SveStateArea(slots=4)
    slot = a.alloc()
    st = rand_state(vl, 99)
    write_sve_state(cpu, st)
    EF.run(cpu, "fpsimd_save_state", a, slot)
    assert a.vregs(slot) == [int.from_bytes(z[:16], "little") for z in st["z"]]
    assert a.fpsr_fpcr(slot) == (st["fpsr"], st["fpcr"])
    write_sve_state(cpu, rand_state(vl, 100))
    EF.run(cpu, "fpsimd_load_state", a, slot)
    got = read_sve_state(cpu)
    # loading V (ldp q) zeroes the Z bits above 128: Linux relies on it (seed 004, patch 1)
    assert got["z"] == [z[:16] + bytes(vl // 8 - 16) for z in st["z"]]


def test_sve_stub_runs_at_queued_vl_and_defers_sysregs():
    cpu = make_cpu(512)
    a = SveStateArea(slots=4)
    slot = a.alloc()
    st = rand_state(512, 3)
    write_sve_state(cpu, st)
    cpu.set_sve_el0(False)
    EF.queue(cpu, "sve_save_state", a, slot)
    cpu.set_vl(128)                       # programmed after the queued save, as in program order
    cpu.stub_sync()
    assert a.decode_sve(slot, 512)["z"] == st["z"]
    assert cpu.cpr_read((3, 0, 1, 2, 0)) == 0            # ZCR_EL1.LEN for 128 bits, written after
    assert cpu.cpr_read((3, 0, 1, 0, 2)) >> 16 & 3 == 1   # CPACR_EL1.ZEN back to "trap EL0"


def queue_on_syscall(cpu: Arm64Cpu, *stubs: str) -> None:
    """The trap hook of these tests: a syscall queues ``stubs`` (run before the next user
    instruction); any other trap stops the CPU."""
    def on_trap(c, trap):
        if trap.kind is TrapKind.SYSCALL:
            for name in stubs:
                c.queue_stub(name)
        else:
            c.stop()
    cpu.on_trap = on_trap


# a guest that sets Z7, P3 and x0-x3, makes a syscall (the hook queues a flush), then stores
# what it sees: Z7 at DATA, P3 at DATA+512, x0-x3 at DATA+256 (shared with test_stub_native_return)
SYSCALL_KEEPS_STATE = """
    ptrue p3.b
    index z7.b, #1, #1
    mov x0, #11
    mov x1, #22
    mov x2, #33
    mov x3, #44
    svc #0
    mov x9, #0x200000
    str z7, [x9]
    add x10, x9, #512
    str p3, [x10]
    stp x0, x1, [x9, #256]
    stp x2, x3, [x9, #272]
    brk #1
"""


@pytest.mark.parametrize("vl", VLS)
def test_sve_stub_chain_from_trap_hook(vl):
    """A syscall hook queues sve_flush_live; the stub runs before the next user instruction via
    the PC redirect (brk at its end), and the user's x0-x3/PC survive."""
    code = asm(SYSCALL_KEEPS_STATE)
    cpu = make_cpu(vl, code)
    cpu.set_sve_el0(True)
    seen = []

    def on_trap(c, trap):
        seen.append(trap.kind)
        if trap.kind is TrapKind.SYSCALL:
            c.set_reg(0, 1234)                 # the syscall's return value
            c.queue_stub("sve_flush_live")
        else:
            c.stop()
    cpu.on_trap = on_trap
    cpu.run(10**6)
    assert seen == [TrapKind.SYSCALL, TrapKind.BREAKPOINT]
    mem = cpu.mm.read(DATA, 2048)
    vb = vl // 8
    assert mem[:vb] == bytes(range(1, 17)) + bytes(vb - 16)
    assert mem[512:512 + vl // 64] == bytes(vl // 64)
    regs = [int.from_bytes(mem[256 + 8 * i:264 + 8 * i], "little") for i in range(4)]
    assert regs == [1234, 22, 33, 44]
    assert cpu.stub_stats["sve_flush_live"] == 1 and cpu.stub_insns >= STUBS["sve_flush_live"][1]


def test_sve_stub_chain_not_cut_by_deadline():
    code = asm("svc #0\nmov x5, #5\nmov x6, #6\nbrk #1")
    cpu = make_cpu(256, code)
    queue_on_syscall(cpu, "sve_flush_live", "sve_flush_p")
    cpu.run(cpu.now + 3)                  # the deadline falls inside the stubs
    n = STUBS["sve_flush_live"][1] + STUBS["sve_flush_p"][1]
    assert cpu.stub_insns == n + 1        # + the eret that entered EL0
    assert cpu.get_pc() == CODE + 4       # stopped at the first user instruction after the stubs
    assert not cpu._stubs_pending()


def test_kernel_text_is_checked_not_interpreted():
    """The machine runs any kernel sequence it is given, but only ones that end in its "ret"
    inside the text, and each once per name; nothing is run before it is installed."""
    cpu = Arm64Cpu(0, Clock(), sve_vl=128)
    with pytest.raises(KeyError, match="install_kernel_text"):
        cpu.queue_stub("sve_flush_p")
    nop = (0xD503201F).to_bytes(4, "little")
    with pytest.raises(ValueError, match="brk"):
        cpu.install_kernel_text(nop * 2, {"spin": KernelSeq(0, 2)})
    ret = KERNEL_SEQ_RET.to_bytes(4, "little")
    cpu.install_kernel_text(nop + ret, {"nop": KernelSeq(0, 2)})
    cpu.install_kernel_text(nop + ret, {"nop": KernelSeq(0, 2)})      # idempotent
    with pytest.raises(RuntimeError, match="different kernel text"):
        EF.install(cpu)
    mm = AddressSpace()
    mm.map(CODE, 0x1000, "r-x", "code")
    cpu.attach_mm(mm)
    cpu.set_pc(CODE)
    cpu.enter_el0()
    t0 = cpu.stub_insns
    cpu.run_stub("nop")
    assert cpu.stub_insns - t0 == 2 and cpu.stub_cycles["nop"] == 2


def test_saving_sequence_needs_a_buffer():
    cpu = Arm64Cpu(0, Clock(), sve_vl=128)
    EF.install(cpu)
    with pytest.raises(ValueError, match="buffer"):
        cpu.queue_stub("fpsimd_save_state", 0)
