# arch: riscv64
# rv_vector: a syscall, then a first vector instruction (VS=Off -> first-use trap), then exit
.include "syscalls.inc"
.globl _start
_start:
    li a0, 1
    la a1, msg
    li a2, 6
    li a7, SYS_write
    ecall
vector_start:
    li t0, 4
    vsetvli t1, t0, e32, m1, ta, ma
    vmv.v.i v1, 7
    vadd.vi v2, v1, 3
    mv a0, t1
    addi a0, a0, -4
done:
    li a7, SYS_exit_group
    ecall
.section .rodata
msg:
    .ascii "hello\n"
