// spin: a CPU-bound loop of N iterations (argv[1], default 10,000,000) — for raw speed and preemption.
.include "syscalls.inc"
.include "a64_util.inc"
.globl _start
_start:
    mov x28, sp
    ATOI_ARG 1, 10000000
.globl spin_loop
spin_loop:
1:  subs x0, x0, #1
    b.ne 1b
.globl spin_loop_end
spin_loop_end:
    SYSCALL SYS_exit_group
