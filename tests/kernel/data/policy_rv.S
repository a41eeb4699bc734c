# arch: riscv64
# policy_rv: vector state live across two getppid syscalls, for switching policies at run time
.include "syscalls.inc"
.globl _start
_start:
    li t0, 4
    vsetvli t1, t0, e32, m1, ta, ma
    vmv.v.i v1, 7
    li a7, SYS_getppid
    ecall
    vsetvli t1, t0, e32, m1, ta, ma      # the syscall discarded vl/vtype (vill): configure again
    vmv.v.i v2, 3
    li a7, SYS_getppid
    ecall
    li a0, 0
    li a7, SYS_exit_group
    ecall
