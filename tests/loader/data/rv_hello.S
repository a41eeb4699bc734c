# arch: riscv64
# Writes "hi\n" and exits 7; uses RVV (vsetvli) so only llvm-mc can assemble it.
.include "test_syscalls.inc"
.include "local_consts.inc"
    .text
    .globl _start
_start:
    li      a0, 4
    vsetvli t0, a0, e32, m1, ta, ma
    li      a0, 1
    la      a1, msg
    li      a2, MSG_LEN
    li      a7, SYS_write
    ecall
    li      a0, EXIT_CODE
    li      a7, SYS_exit
    ecall
    .data
    .globl msg
msg:
    .ascii "hi\n"
    .bss
buf:
    .zero 8192
