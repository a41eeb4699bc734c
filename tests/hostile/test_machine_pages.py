"""Hostile guests against the machine's own pages (issue 11, items 1 and 2).

emukern's arm64 CPU keeps two machine-owned ranges in Unicorn: the kernel stub code (the eret
that enters EL0 and the FP/SVE save/load sequences) at STUB_BASE, and the stubs' bounce buffer
for task FP/SVE state at SVE_AREA_BASE.  Both sit at user addresses above TASK_SIZE's stack top,
where Linux has nothing mapped: every EL0 read, write or jump there must be a SIGSEGV, on both
arches, and no task's saved registers may be reachable by another.
"""
from __future__ import annotations

import pytest

from emukern.machine.clock import Clock
from emukern.kernel.arch.arm64 import entry_fpsimd as EF
from emukern.kernel.arch.arm64.entry_fpsimd import STUBS, SVE_AREA_BASE, SveStateArea, enc_brk
from emukern.machine.cpu_arm64 import BOUNCE_BASE, STUB_BASE, Arm64Cpu, StubOverrun
from emukern.machine.memory import AddressSpace
from tests.machine.test_sve_stub import queue_on_syscall

SIGSEGV = 11
FPSIMD_SAVE = STUBS["fpsimd_save_state"][0]
TARGETS = {"eret page": STUB_BASE, "stub code": FPSIMD_SAVE, "sve area": SVE_AREA_BASE,
           "sve area slot 1": SVE_AREA_BASE + 0x2480}


def a64_addr(reg: str, value: int) -> str:
    out = [f"movz {reg}, #{value & 0xFFFF}"]
    for sh in (16, 32, 48):
        part = (value >> sh) & 0xFFFF
        if part:
            out.append(f"movk {reg}, #{part}, lsl #{sh}")
    return "\n    ".join(out)


def guest(arch: str, addr: int, access: str) -> str:
    if arch == "arm64":
        op = {"r": "ldr x2, [x1]", "w": "str x1, [x1]", "x": "blr x1"}[access]
        return f""".globl _start
_start:
    {a64_addr('x1', addr)}
    {op}
    mov x0, #0
    mov x8, #94
    svc #0
"""
    op = {"r": "ld t1, 0(t0)", "w": "sd t0, 0(t0)", "x": "jalr t0"}[access]
    return f""".globl _start
_start:
    li t0, {addr:#x}
    {op}
    li a0, 0
    li a7, 94
    ecall
"""


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
@pytest.mark.parametrize("access", ["r", "w", "x"])
@pytest.mark.parametrize("where", sorted(TARGETS))
def test_el0_access_to_machine_pages_is_sigsegv(run_guest, arch, access, where):
    addr = TARGETS[where]
    r, _ = run_guest(guest(arch, addr, access), arch=arch)
    assert r.signal == SIGSEGV, (r.stop_reason, r.message)
    assert r.fault is not None and r.fault.get("addr") == addr


FORK_PEEK = """.globl _start
// The parent puts a magic value in v0, forks, and waits; the child (its FP state now saved by
// the kernel on the context switch) looks for it in the machine's FP/SVE area and overwrites it.
_start:
    movz x9, #0xbeef
    movk x9, #0xdead, lsl #16
    fmov d0, x9
    mov x8, #220          // clone(SIGCHLD)
    mov x0, #17
    mov x1, #0
    mov x2, #0
    mov x3, #0
    mov x4, #0
    svc #0
    cbz x0, child
    mov x19, x0
    mov x0, #-1           // wait4(-1, &status, 0, 0)
    adr x1, status
    mov x2, #0
    mov x3, #0
    mov x8, #260
    svc #0
    fmov x10, d0
    cmp x10, x9
    b.ne changed
    ldr w0, status        // the child's fate: 11 (SIGSEGV) expected
    and w0, w0, #0x7f
    mov x8, #94
    svc #0
changed:
    mov x0, #99
    mov x8, #94
    svc #0
child:
    movz x1, #0x40, lsl #32
    str x1, [x1, #0x200]
    mov x0, #0
    mov x8, #93
    svc #0
.data
status: .word 0
"""


def test_child_cannot_reach_parents_saved_fp_state(run_guest):
    r, _ = run_guest(FORK_PEEK, arch="arm64")
    assert r.exit_code == SIGSEGV, (r.stop_reason, r.message, r.exit_status)


# ---- the stubs themselves: read-only to the guest, bounded for the machine ----------------------
def _cpu() -> Arm64Cpu:
    cpu = Arm64Cpu(0, Clock(), sve_vl=256)
    EF.install(cpu)
    mm = AddressSpace()
    mm.map(0x10_0000, 0x1000, "r-x", "code", (0xD4000001).to_bytes(4, "little") + enc_brk(1).to_bytes(4, "little"))
    cpu.attach_mm(mm)
    cpu.set_pc(0x10_0000)
    cpu.enter_el0()
    return cpu


def test_stub_that_never_returns_is_an_emulator_error_not_a_hang():
    cpu = _cpu()
    entry = STUBS["sve_flush_p"][0]
    cpu.uc.mem_write(entry, (0x14000000).to_bytes(4, "little"))   # a machine bug, simulated: `b .`
    with pytest.raises(StubOverrun, match="sve_flush_p"):
        cpu.run_stub("sve_flush_p")
    # the same from a trap hook (the in-hook stub chain)
    queue_on_syscall(cpu, "sve_flush_p")
    with pytest.raises(StubOverrun, match="sve_flush_p"):
        cpu.run(cpu.now + 10**6)


def test_save_and_load_go_through_the_bounce_buffer_only():
    cpu = _cpu()
    area = SveStateArea(slots=4)
    slot = area.alloc()
    cpu.load_fp({"v": [0x1122334455667788 + i for i in range(32)], "fpsr": 0, "fpcr": 0})
    EF.run(cpu, "fpsimd_save_state", area, slot)
    assert area.vregs(slot)[5] == 0x1122334455667788 + 5
    # the area is host memory only: Unicorn cannot see it, and the bounce buffer is closed
    from unicorn import UC_PROT_EXEC, UC_PROT_NONE, UcError
    with pytest.raises(UcError):
        cpu.uc.mem_read(area.base + area.slot_size * 3, 8)
    regions = {start: perms for start, _end, perms in cpu.uc.mem_regions()}
    assert regions[STUB_BASE] == UC_PROT_EXEC and regions[BOUNCE_BASE] == UC_PROT_NONE
