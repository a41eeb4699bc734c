"""Issue 2: both arches run hello and the syscall program; ELF loading; traps; determinism; budget."""
from __future__ import annotations

import json

import pytest

from emukern.api import Machine
from emukern.kernel import errno as E

ARCH_DIR = {"riscv64": "riscv", "arm64": "arm64"}
ARCHES = list(ARCH_DIR)


def prog(guest_asm, arch: str, name: str):
    return guest_asm / ARCH_DIR[arch] / f"{name}.S"


@pytest.mark.parametrize("arch", ARCHES)
def test_hello(run_guest, guest_asm, arch):
    r, m = run_guest(prog(guest_asm, arch, "hello"))
    assert r.exit_status == 0 and r.exit_code == 0
    assert r.stdout.startswith(b"Hello from")
    assert r.traps == {"syscall": 2}
    assert r.syscalls == {"write": 1, "exit_group": 1}
    assert r.user_insns > 0 and r.kernel_cycles > 0
    assert r.cycles == r.user_insns + r.kernel_cycles     # one CPU, never idle
    assert m.config.arch == arch                          # detected from the source path


@pytest.mark.parametrize("arch", ARCHES)
def test_syscall_program(run_guest, guest_asm, arch):
    r, m = run_guest(prog(guest_asm, arch, "syscalls"))
    failmask = int.from_bytes(m.read(m.symbol("failmask"), 8), "little")
    assert failmask == 0, f"failed checks: {failmask:#b}"
    assert r.exit_status == 0
    assert r.stdout == b"syscalls done\n"
    assert r.unknown_syscalls == {999: 1}
    # nanosleep(1 ms) really passed 1 ms of simulated time
    assert r.sim_seconds >= 0.001


@pytest.mark.parametrize("arch", ARCHES)
def test_static_elf_runs_with_arch_detected(arch, guest_asm):
    from emukern.loader.asm import assemble
    elf = assemble(prog(guest_asm, arch, "hello"), arch)
    m = Machine()                                          # no arch given: read from the ELF
    r = m.load(elf).run()
    assert m.config.arch == arch and r.exit_status == 0


def test_wrong_arch_is_a_clear_error(guest_asm):
    from emukern.errors import ConfigError
    m = Machine()
    m.explicit_arch = "riscv64"
    with pytest.raises(ConfigError, match="arm64 program"):
        m.load(prog(guest_asm, "arm64", "hello"))


RV_SEGV = """
.globl _start
_start:
    li t0, 16
    sd t0, 0(t0)
"""
A64_SEGV = """
.globl _start
_start:
    mov x1, #16
    str x1, [x1]
"""


@pytest.mark.parametrize("arch,src", [("riscv64", RV_SEGV), ("arm64", A64_SEGV)])
def test_sigsegv_reports_pc_insn_and_address(run_guest, arch, src):
    r, m = run_guest(src, arch=arch)
    assert r.exit_status == 128 + E.SIGSEGV and r.signal == E.SIGSEGV
    assert r.fault["addr"] == 16
    assert r.fault["pc"] == m.symbol("_start") + (2 if arch == "riscv64" else 4)   # c.li is 2 bytes
    assert r.fault["disasm"].split()[0] in ("sd", "str")
    assert r.traps.get("mem-fault") == 1


@pytest.mark.parametrize("arch,word", [("riscv64", ".4byte 0xffffffff"), ("arm64", ".inst 0x00000000")])
def test_sigill_for_unhandled_undefined_instruction(run_guest, arch, word):
    r, m = run_guest(f".globl _start\n_start:\n    {word}\n", arch=arch)
    assert r.exit_status == 128 + E.SIGILL
    assert r.fault["pc"] == m.symbol("_start")
    assert r.fault["signame"] == "SIGILL"


@pytest.mark.parametrize("arch,src", [
    ("riscv64", ".globl _start\n_start:\n    ebreak\n"),
    ("arm64", ".globl _start\n_start:\n    brk #3\n")])
def test_breakpoint_is_sigtrap(run_guest, arch, src):
    r, _ = run_guest(src, arch=arch)
    assert r.exit_status == 128 + E.SIGTRAP
    assert r.traps.get("breakpoint") == 1


@pytest.mark.parametrize("arch", ARCHES)
def test_budget_stops_a_runaway_guest(run_guest, guest_asm, arch):
    r, _ = run_guest(prog(guest_asm, arch, "spin"), argv=["100000000"], max_insns=50_000)
    assert r.stop_reason == "budget" and r.exit_status == 124
    assert "--max-insns" in r.message
    assert 50_000 <= r.user_insns <= 50_001


@pytest.mark.parametrize("arch", ARCHES)
def test_stack_grows_on_demand(run_guest, arch):
    # touch 1 MiB below the initial stack pointer: Linux grows the stack VMA, so must we
    src = {"riscv64": ".globl _start\n_start:\n    li t0, 0x100000\n    sub t0, sp, t0\n    sd t0, 0(t0)\n"
                      "    li a0, 0\n    li a7, 94\n    ecall\n",
           "arm64": ".globl _start\n_start:\n    mov x1, sp\n    sub x1, x1, #0x100000\n    str x1, [x1]\n"
                    "    mov x0, #0\n    mov x8, #94\n    svc #0\n"}[arch]
    r, _ = run_guest(src, arch=arch)
    assert r.exit_status == 0, r.fault


@pytest.mark.parametrize("arch", ARCHES)
def test_determinism_two_runs_identical(run_guest, guest_asm, arch):
    a, _ = run_guest(prog(guest_asm, arch, "lat_ctx"), argv=["50"])
    b, _ = run_guest(prog(guest_asm, arch, "lat_ctx"), argv=["50"])
    assert json.dumps(a.to_json(), sort_keys=True) == json.dumps(b.to_json(), sort_keys=True)


@pytest.mark.parametrize("arch", ARCHES)
def test_guest_counters_come_from_the_clock(run_guest, arch):
    # rdcycle/rdtime/rdinstret (RISC-V) and CNTVCT/CNTFRQ (arm64) read emukern's clock
    if arch == "riscv64":
        src = (".globl _start\n_start:\n    rdcycle a0\n    rdinstret a1\n    rdtime a2\n"
               "    la t0, out\n    sd a0, 0(t0)\n    sd a1, 8(t0)\n    sd a2, 16(t0)\n"
               "    li a0, 0\n    li a7, 94\n    ecall\n.data\n.globl out\nout: .space 24\n")
    else:
        src = (".globl _start\n_start:\n    mrs x0, CNTVCT_EL0\n    mrs x1, CNTFRQ_EL0\n"
               "    adrp x2, out\n    add x2, x2, :lo12:out\n    stp x0, x1, [x2]\n"
               "    mov x0, #0\n    mov x8, #94\n    svc #0\n.data\n.globl out\nout: .space 24\n")
    r, m = run_guest(src, arch=arch)
    vals = [int.from_bytes(m.read(m.symbol("out") + 8 * i, 8), "little") for i in range(3)]
    if arch == "riscv64":
        cycle, instret, time_ = vals
        assert 0 < cycle < 5000 and instret == 2 and time_ == cycle // 10   # 1 GHz CPU, 100 MHz timer
    else:
        cnt, frq, _ = vals
        assert frq == 100_000_000 and 0 < cnt < 500


def test_random_instruction_words_never_crash_the_host():
    """hypothesis: arbitrary words placed at the entry point end in a clean exit, signal or budget."""
    from hypothesis import given, settings, strategies as st
    from emukern.loader.asm import assemble
    from pathlib import Path
    import tempfile

    d = Path(tempfile.mkdtemp())
    elfs = {}
    for arch, nop in (("riscv64", "nop"), ("arm64", "nop")):
        src = d / f"pad_{arch}.S"
        src.write_text(f"# arch: {arch}\n.globl _start\n_start:\n" + f"    {nop}\n" * 16 +
                       ("    li a7, 94\n    ecall\n" if arch == "riscv64" else "    mov x8, #94\n    svc #0\n"))
        elfs[arch] = assemble(src, arch)

    @settings(max_examples=60, deadline=None)
    @given(arch=st.sampled_from(ARCHES), words=st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=16))
    def check(arch, words):
        m = Machine(max_insns=20_000)
        m.load(elfs[arch])
        k = m.kernel
        entry = k.image.entry
        k.init_task.mm.write(entry, b"".join(w.to_bytes(4, "little") for w in words), need="r")
        r = m.run()
        assert r.stop_reason in ("exited", "killed", "budget", "deadlock")
    check()


@pytest.mark.parametrize("arch", ARCHES)
def test_cost_override_moves_cycles_exactly(run_guest, guest_asm, arch):
    base, _ = run_guest(prog(guest_asm, arch, "syscall_loop"), argv=["100"])
    more, _ = run_guest(prog(guest_asm, arch, "syscall_loop"), argv=["100"],
                        costs={"exception_entry": 60 + 7})
    traps = sum(base.traps.values())
    assert more.cycles - base.cycles == 7 * traps
    assert more.user_insns == base.user_insns


def test_syndromes(run_guest):
    r, m = run_guest(".globl _start\n_start:\n    svc #0x42\n    .inst 0\n", arch="arm64")
    syscall, undef = m.trap_log[0], m.trap_log[1]
    assert syscall.trap.ec == 0x15 and syscall.trap.iss == 0x42
    assert undef.trap.ec == 0x00 and undef.trap.esr >> 25 & 1     # IL: 32-bit instruction
    r, m = run_guest(".globl _start\n_start:\n    li a7, 500\n    ecall\n    .4byte 0xffffffff\n", arch="riscv64")
    ecall, ill = m.trap_log[0], m.trap_log[1]
    assert ecall.trap.cause == 8 and ill.trap.cause == 2 and ill.trap.tval == 0xFFFFFFFF
    assert r.unknown_syscalls == {500: 1}


def test_map_fixed_over_machine_pages_is_enomem(run_guest):
    src = (".globl _start\n_start:\n    ldr x0, =0x3fffff0000\n    mov x1, #4096\n    mov x2, #7\n"
           "    mov x3, #0x32\n    mov x4, #-1\n    mov x5, #0\n    mov x8, #222\n    svc #0\n"
           "    neg x0, x0\n    mov x8, #94\n    svc #0\n")
    r, _ = run_guest(src, arch="arm64")
    assert r.exit_status == 12          # ENOMEM, and the host survived


@pytest.mark.parametrize("shift", [33, 36, 39])
def test_huge_mmap_and_brk_are_enomem_not_a_host_crash(run_guest, shift):
    src = (f".globl _start\n_start:\n    li a0, 0\n    li a1, 1\n    slli a1, a1, {shift}\n    li a2, 3\n"
           "    li a3, 0x22\n    li a4, -1\n    li a5, 0\n    li a7, 222\n    ecall\n    mv s0, a0\n"
           "    li a0, 0\n    li a7, 214\n    ecall\n    mv s1, a0\n    li t0, 1\n    slli t0, t0, 38\n"
           "    add a0, a0, t0\n    li a7, 214\n    ecall\n    sub a0, a0, s1\n    snez a0, a0\n"
           "    bnez a0, 1f\n    neg a0, s0\n1:  li a7, 94\n    ecall\n")
    r, _ = run_guest(src, arch="riscv64")
    assert r.exit_status == 12          # mmap: -ENOMEM (over the 4 GiB address-space limit); brk unchanged
