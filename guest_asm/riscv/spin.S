# spin: a CPU-bound loop of N iterations (argv[1], default 10,000,000) — for raw speed and preemption.
.include "syscalls.inc"
.include "rv_util.inc"
.globl _start
_start:
    mv s11, sp
    ATOI_ARG 1, 10000000
.globl spin_loop
spin_loop:
1:  addi a0, a0, -1
    bnez a0, 1b
.globl spin_loop_end
spin_loop_end:
    SYSCALL SYS_exit_group
