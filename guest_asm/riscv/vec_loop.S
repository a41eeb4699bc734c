# vec_loop: a timing loop of vector instructions for emukern's RVV benchmark (bench/rvv_unit.py).
# argv[1] = iterations (default 1000), argv[2] = vtype (decimal, default 16 = e32,m1,tu,mu),
# argv[3] = kind: 0 = 16 x vadd.vv per iteration, 1 = 8 x (vle32.v + vse32.v) per iteration.
# AVL = VLMAX.  Exit status 0; stdout: nothing.
.include "syscalls.inc"
.include "rv_util.inc"
.globl _start
_start:
    mv s11, sp
    ATOI_ARG 1, 1000
    mv s0, a0
    ATOI_ARG 2, 16
    mv s1, a0
    ATOI_ARG 3, 0
    mv s2, a0
    la a0, buf
    vsetvl t0, zero, s1
    bnez s2, 2f
1:  .rept 16
    vadd.vv v8, v16, v24
    .endr
    addi s0, s0, -1
    bnez s0, 1b
    j 3f
2:  .rept 8
    vle32.v v8, (a0)
    vse32.v v8, (a0)
    .endr
    addi s0, s0, -1
    bnez s0, 2b
3:  li a0, 0
    SYSCALL SYS_exit_group
.bss
.balign 64
buf: .space 2048
