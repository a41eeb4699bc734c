# syscall_loop: getppid() N times (argv[1], default 100000) — the null-syscall round trip.
.include "syscalls.inc"
.include "rv_util.inc"
.globl _start
_start:
    mv s11, sp
    ATOI_ARG 1, 100000
    mv s0, a0
.globl sys_loop
sys_loop:
1:  li a7, SYS_getppid
    ecall
    addi s0, s0, -1
    bnez s0, 1b
.globl sys_loop_end
sys_loop_end:
    li a0, 0
    SYSCALL SYS_exit_group
