# arch: riscv64
# rv_dirty: use V, then make syscalls so the kernel's discard/restore decisions show
.include "syscalls.inc"
.globl _start
_start:
    li t0, 8
    vsetvli t1, t0, e32, m1, ta, ma
    vmv.v.i v4, 5
    li a7, SYS_getpid
    ecall
    vsetvli t1, t0, e32, m1, ta, ma     # syscalls clobber vector state (the ABI): set vtype again
    vadd.vi v4, v4, 1
    li a7, SYS_getpid
    ecall
    li a0, 0
    li a7, SYS_exit_group
    ecall
