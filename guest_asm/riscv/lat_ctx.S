# lat_ctx: two processes ping-pong one byte over two pipes, N round trips (argv[1], default 1000).
# Like lmbench's lat_ctx with 2 processes and no working set.  Exit status 0 on success.
.include "syscalls.inc"
.include "rv_util.inc"
.globl _start
_start:
    mv s11, sp
    ATOI_ARG 1, 1000
    mv s0, a0                   # s0 = iterations
    la a0, p1
    li a1, 0
    SYSCALL SYS_pipe2
    bnez a0, fail
    la a0, p2
    li a1, 0
    SYSCALL SYS_pipe2
    bnez a0, fail
    li a0, SIGCHLD              # fork
    li a1, 0
    li a2, 0
    li a3, 0
    li a4, 0
    SYSCALL SYS_clone
    bltz a0, fail
    beqz a0, child
parent:
    mv s1, s0
1:  lw a0, p1+4                 # write end of p1
    la a1, buf
    li a2, 1
    SYSCALL SYS_write
    li t0, 1
    bne a0, t0, fail
    lw a0, p2                   # read end of p2
    la a1, buf
    li a2, 1
    SYSCALL SYS_read
    li t0, 1
    bne a0, t0, fail
    addi s1, s1, -1
    bnez s1, 1b
    li a0, -1
    la a1, status
    li a2, 0
    li a3, 0
    SYSCALL SYS_wait4
    bltz a0, fail
    lw a0, status
    srli a0, a0, 8
    SYSCALL SYS_exit_group
child:
    mv s1, s0
2:  lw a0, p1
    la a1, buf
    li a2, 1
    SYSCALL SYS_read
    li t0, 1
    bne a0, t0, fail
    lw a0, p2+4
    la a1, buf
    li a2, 1
    SYSCALL SYS_write
    addi s1, s1, -1
    bnez s1, 2b
    li a0, 0
    SYSCALL SYS_exit_group
fail:
    li a0, 1
    SYSCALL SYS_exit_group
.bss
.align 3
p1: .space 8
p2: .space 8
status: .space 8
buf: .space 8
