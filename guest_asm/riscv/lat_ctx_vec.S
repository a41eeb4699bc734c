# lat_ctx_vec: lmbench `lat_ctx 2` with vector use — two processes ping-pong one byte over two
# pipes; before each write each process touches its vector registers (vsetvli e8 m1 + vadd.vi,
# as vectorised libc code would), so its context is live and Dirty at every syscall.
# argv[1] = round trips (default 1000).  The parent times the loop with rdcycle and writes
# one line to stdout: "cycles=<elapsed cycles> iterations=<round trips>".  Exit status 0 on success.
# argv[2] = 1: lmbench's overhead run instead — one process does the same per-round-trip work
# (2 x TOUCH + write + read on its own pipe, so nothing blocks and nothing is switched).
.include "syscalls.inc"
.include "rv_util.inc"
.macro TOUCH
    vsetvli t0, zero, e8, m1, ta, ma
    vadd.vi v1, v1, 1
.endm
.globl _start
_start:
    mv s11, sp
    ATOI_ARG 1, 1000
    mv s0, a0
    ATOI_ARG 2, 0
    mv s5, a0
    la a0, p1
    li a1, 0
    SYSCALL SYS_pipe2
    bnez a0, fail
    la a0, p2
    li a1, 0
    SYSCALL SYS_pipe2
    bnez a0, fail
    bnez s5, overhead
    li a0, SIGCHLD
    li a1, 0
    li a2, 0
    li a3, 0
    li a4, 0
    SYSCALL SYS_clone
    bltz a0, fail
    beqz a0, child
parent:
    TOUCH                       # first use outside the timed loop
    mv s1, s0
    rdcycle s3
1:  TOUCH
    lw a0, p1+4
    la a1, buf
    li a2, 1
    SYSCALL SYS_write
    li t0, 1
    bne a0, t0, fail
    lw a0, p2
    la a1, buf
    li a2, 1
    SYSCALL SYS_read
    li t0, 1
    bne a0, t0, fail
    addi s1, s1, -1
    bnez s1, 1b
    rdcycle s4
    sub s4, s4, s3
    li a0, -1
    la a1, status
    li a2, 0
    li a3, 0
    SYSCALL SYS_wait4
    bltz a0, fail
    lw t0, status
    bnez t0, fail
report:
    WRITE_UDEC2 s4, s0, cycles, iterations   # "cycles=<elapsed> iterations=<n>\n"
    li a0, 0
    SYSCALL SYS_exit_group
overhead:
    TOUCH
    mv s1, s0
    rdcycle s3
3:  TOUCH
    lw a0, p1+4
    la a1, buf
    li a2, 1
    SYSCALL SYS_write
    lw a0, p1
    la a1, buf
    li a2, 1
    SYSCALL SYS_read
    TOUCH
    lw a0, p1+4
    la a1, buf
    li a2, 1
    SYSCALL SYS_write
    lw a0, p1
    la a1, buf
    li a2, 1
    SYSCALL SYS_read
    addi s1, s1, -1
    bnez s1, 3b
    rdcycle s4
    sub s4, s4, s3
    j report
child:
    TOUCH
    mv s1, s0
2:  lw a0, p1
    la a1, buf
    li a2, 1
    SYSCALL SYS_read
    li t0, 1
    bne a0, t0, fail
    TOUCH
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
.data
.align 3
p1: .space 8
p2: .space 8
status: .space 8
buf: .space 8
