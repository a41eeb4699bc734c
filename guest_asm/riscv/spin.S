# spin: a CPU-bound loop of N iterations (argv[1], default 10,000,000) — for raw speed and preemption.
.include "syscalls.inc"
.include "rv_util.inc"
.globl _start
_start:
    mv s11, sp
    ATOI_ARG 1, 10000000
1:  addi a0, a0, -1
    bnez a0, 1b
    SYSCALL SYS_exit_group
