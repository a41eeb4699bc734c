"""fork copies the mm's stack growth limit: a child can grow its stack past the first mapping
(expand_stack), as Linux's dup_mm gives it the parent's whole mm_struct."""
import pytest

FORK_AND_GROW = """
.globl _start
_start:
    li a0, 17          # clone(SIGCHLD): fork
    li a1, 0
    li a2, 0
    li a3, 0
    li a4, 0
    li a7, 220
    ecall
    bnez a0, parent
    li t0, {depth}     # child: a store this far below sp (past the first 128 KiB mapping)
    sub t1, sp, t0
    sd zero, 0(t1)
    li a0, 0
    li a7, 94
    ecall
parent:
    li a0, -1
    la a1, st
    li a2, 0
    li a3, 0
    li a7, 260
    ecall
    lw a0, st          # the child's wait status: 0, or 11 if it died of SIGSEGV
    li a7, 94
    ecall
.bss
st: .space 8
"""


@pytest.mark.parametrize("depth, status", [(0x100000, 0), (0x40000, 0), (16 << 20, 11)])
def test_forked_child_grows_its_stack(run_guest, depth, status):
    r, _ = run_guest(FORK_AND_GROW.format(depth=depth), arch="riscv64")
    assert r.exit_status == status      # 16 MiB is past RLIMIT_STACK (8 MiB): SIGSEGV, as in Linux
