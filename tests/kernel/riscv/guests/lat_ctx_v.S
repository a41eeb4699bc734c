# lat_ctx_v: the vector-enabled lat_ctx of the "riscv: optimize Vector context restore on syscall"
# thread — two processes ping-pong one byte over two pipes after each has touched V once
# (first use before the loop), so the contexts are live but, after the first syscall, hold no user
# data.  argv[1] = round trips (default 1000); argv[2] = 1: touch V before every write as well
# (the context is Dirty at every syscall, like guest_asm/riscv/lat_ctx_vec.S).  The parent writes
# "cycles=<elapsed cycles> iterations=<round trips>"; exit status 0 on success.
.include "syscalls.inc"
.include "rv_util.inc"
.macro TOUCH
    vsetvli t0, zero, e8, m1, ta, ma
    vadd.vi v1, v1, 1
.endm
.macro MAYBE_TOUCH
    beqz s5, 9f
    TOUCH
9:
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
1:  MAYBE_TOUCH
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
    WRITE_UDEC2 s4, s0, cycles, iterations   # "cycles=<elapsed> iterations=<n>\n"
    li a0, 0
    SYSCALL SYS_exit_group
child:
    TOUCH
    mv s1, s0
2:  lw a0, p1
    la a1, buf
    li a2, 1
    SYSCALL SYS_read
    li t0, 1
    bne a0, t0, fail
    MAYBE_TOUCH
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
