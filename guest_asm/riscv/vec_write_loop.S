# vec_write_loop: a write-heavy vector program.  Each of N iterations (argv[1], default 500) puts
# the iteration number in every element of v1 (e32, m1: the state becomes Dirty), write()s S bytes
# (argv[2], default 4096) into a pipe and read()s them back, then checks v1 — as code that keeps a
# value in a vector register across a syscall would (legal only while abi.riscv_v_vstate_discard
# is 0).  At the end it prints "kept=K lost=L\n" in decimal: K iterations whose v1 still held the
# value, L iterations where it held something else.  Exit status 0 on success.
.include "syscalls.inc"
.include "rv_util.inc"
.globl _start
_start:
    mv s11, sp
    ATOI_ARG 2, 4096
    mv s4, a0                   # s4 = bytes per write
    ATOI_ARG 1, 500
    mv s0, a0                   # s0 = iterations left
    li s5, 0                    # kept
    li s6, 0                    # lost
    la a0, pfd
    li a1, 0
    SYSCALL SYS_pipe2
    bnez a0, fail
1:  vsetvli t0, zero, e32, m1, ta, ma
    vmv.v.x v1, s0
    lw a0, pfd+4
    la a1, buf
    mv a2, s4
    SYSCALL SYS_write
    bne a0, s4, fail
    lw a0, pfd
    la a1, buf
    mv a2, s4
    SYSCALL SYS_read
    bne a0, s4, fail
    vsetvli t0, zero, e32, m1, ta, ma   # (a clobber leaves vtype.vill: reconfigure to look)
    vmv.x.s t1, v1
    sext.w t2, s0
    beq t1, t2, 2f
    addi s6, s6, 1
    j 3f
2:  addi s5, s5, 1
3:  addi s0, s0, -1
    bnez s0, 1b
    la s7, out                  # "kept=K lost=L\n"
    la a0, lbl_kept
    call stpcpy
    mv a0, s5
    call utoa
    la a0, lbl_lost
    call stpcpy
    mv a0, s6
    call utoa
    li t0, '\n'
    sb t0, 0(s7)
    addi s7, s7, 1
    li a0, 1
    la a1, out
    sub a2, s7, a1
    SYSCALL SYS_write
    li a0, 0
    SYSCALL SYS_exit_group

# stpcpy: the NUL-terminated string at a0 copied to s7 (without its NUL), s7 advanced past it
stpcpy:
1:  lbu t0, 0(a0)
    beqz t0, 2f
    sb t0, 0(s7)
    addi s7, s7, 1
    addi a0, a0, 1
    j 1b
2:  ret

# utoa: decimal digits of a0 at s7, s7 advanced past them (clobbers t0-t3)
utoa:
    la t1, digits + 24          # build backwards
    li t2, 10
1:  remu t0, a0, t2
    addi t0, t0, '0'
    addi t1, t1, -1
    sb t0, 0(t1)
    divu a0, a0, t2
    bnez a0, 1b
    la t3, digits + 24
2:  lbu t0, 0(t1)
    sb t0, 0(s7)
    addi s7, s7, 1
    addi t1, t1, 1
    bne t1, t3, 2b
    ret
fail:
    li a0, 1
    SYSCALL SYS_exit_group
.section .rodata
lbl_kept: .asciz "kept="
lbl_lost: .asciz " lost="
.bss
.align 4
pfd: .space 8
out: .space 64
digits: .space 24
buf: .space 65536
