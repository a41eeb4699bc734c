"""PTRACE_SINGLESTEP (guest_asm/c/ptrace_step_probe.c, a real tracer/tracee pair).

arm64 (debug-monitors.c single_step_handler): the CPU runs exactly one user instruction with the
software step armed, then the step exception sends SIGTRAP, si_code TRAP_TRACE (2), si_addr the
next pc; a stepped svc reports at the syscall's exit as SIGTRAP with si_code SI_USER (0).
riscv64: no hardware step and no arch_has_single_step in Linux: EIO."""
from __future__ import annotations

from emukern.api import Machine

ARM64 = ("first stop: 0x57f\n"                       # the brk: SIGTRAP
         "step 1: 0, status 0x57f, pc brk+8, x9 5, si_code 2, si_addr is pc 1\n"
         "step 2: 0, status 0x57f, pc brk+12, x9 6, si_code 2, si_addr is pc 1\n"
         "step 3: 0, status 0x57f, pc brk+16, x9 7, si_code 2, si_addr is pc 1\n"
         "step 4: 0, status 0x57f, pc brk+20, x9 7, si_code 2, si_addr is pc 1\n"
         "step 5: 0, status 0x57f, pc brk+24, x9 7, si_code 0, si_addr is pc 0, x0 is the child's pid 1\n"
         "child exit: 7\n")


def test_singlestep_arm64(cguest):
    r = Machine(arch="arm64").load(cguest("ptrace_step_probe", "arm64"), []).run()
    assert r.exit_status == 0, (r.message, r.stdout)
    assert r.stdout.decode() == ARM64


def test_singlestep_riscv_is_eio(cguest):
    r = Machine(arch="riscv64").load(cguest("ptrace_step_probe", "riscv64"), []).run()
    assert r.exit_status == 0, (r.message, r.stdout)
    assert r.stdout.decode() == "first stop: 0x137f\nsinglestep: -1 EIO\nchild exit: 7\n"


def test_step_counts_one_instruction(cguest):
    """One software-step exception per stepped instruction that is not a syscall (4: mov, add,
    add, mov; the pc and x9 above show each ran alone), none for the svc, which reports at
    its exit."""
    m = Machine(arch="arm64")
    r = m.load(cguest("ptrace_step_probe", "arm64"), []).run()
    steps = [t for t in m.trap_log if getattr(t, "handler", "") == "single_step_handler"]
    assert r.exit_status == 0 and len(steps) == 4
