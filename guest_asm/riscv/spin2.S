# spin2: fork, then parent and child both spin N iterations (argv[1], default 2,000,000);
# the parent waits for the child and exits with the child's status. On one CPU only the timer
# tick can interleave them.
.include "syscalls.inc"
.include "rv_util.inc"
.globl _start
_start:
    mv s11, sp
    ATOI_ARG 1, 2000000
    mv s0, a0
    li a0, SIGCHLD
    li a1, 0
    li a2, 0
    li a3, 0
    li a4, 0
    SYSCALL SYS_clone
    mv s1, a0
    mv t0, s0
1:  addi t0, t0, -1
    bnez t0, 1b
    beqz s1, child
    li a0, -1
    la a1, status
    li a2, 0
    li a3, 0
    SYSCALL SYS_wait4
    lw a0, status
    srli a0, a0, 8
    SYSCALL SYS_exit_group
child:
    li a0, 7
    SYSCALL SYS_exit_group
.bss
.align 3
status: .space 8
