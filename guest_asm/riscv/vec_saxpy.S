# vec_saxpy: integer saxpy y[i] = a * x[i] + y[i] on int32 (vsetvli e32/m4, vle32.v, vmul.vx,
# vadd.vv, vse32.v), N elements (argv[1], default 1000; at most 65536), a = -7; checked
# against a scalar loop computing the same into z[].
# stdout: the N result words y[0..N-1] (for differential runs against qemu-riscv64).
# Exit status: 0 = y matches z, 1 = mismatch, 3 = N too large.
.include "syscalls.inc"
.include "rv_util.inc"
.equ MAXN, 65536
.globl _start
_start:
    mv s11, sp
    ATOI_ARG 1, 1000
    mv s0, a0                   # s0 = n
    li t0, MAXN
    bgtu s0, t0, toobig
    li s3, -7                   # s3 = a
    la s4, xs
    la s5, ys
    la s6, zs
    # x[i] = i * 2654435761 (mod 2^32), y[i] = z[i] = (i ^ 0x5a5a) - 300000
    li t0, 0
    li t4, 2654435761
    li t5, 0x5a5a
    li t6, 300000
1:  bgeu t0, s0, 2f
    slli t1, t0, 2
    mul t2, t0, t4
    add t3, s4, t1
    sw t2, 0(t3)
    xor t2, t0, t5
    sub t2, t2, t6
    add t3, s5, t1
    sw t2, 0(t3)
    add t3, s6, t1
    sw t2, 0(t3)
    addi t0, t0, 1
    j 1b
2:  # vector saxpy
    mv a0, s0
    mv a1, s4
    mv a2, s5
3:  vsetvli t0, a0, e32, m4, ta, ma
    vle32.v v8, (a1)
    vle32.v v16, (a2)
    vmul.vx v8, v8, s3
    vadd.vv v16, v16, v8
    vse32.v v16, (a2)
    slli t1, t0, 2
    add a1, a1, t1
    add a2, a2, t1
    sub a0, a0, t0
    bnez a0, 3b
    # scalar saxpy into z, then compare with y
    li t0, 0
4:  bgeu t0, s0, 5f
    slli t1, t0, 2
    add t2, s4, t1
    lw t3, 0(t2)
    mulw t3, t3, s3
    add t2, s6, t1
    lw t4, 0(t2)
    addw t4, t4, t3
    sw t4, 0(t2)
    add t2, s5, t1
    lw t5, 0(t2)
    bne t4, t5, bad
    addi t0, t0, 1
    j 4b
5:  li a0, 1                    # write(1, y, 4n)
    mv a1, s5
    slli a2, s0, 2
    SYSCALL SYS_write
    li a0, 0
    SYSCALL SYS_exit_group
bad:
    li a0, 1
    SYSCALL SYS_exit_group
toobig:
    li a0, 3
    SYSCALL SYS_exit_group
.bss
.balign 64
xs: .space 4 * MAXN
ys: .space 4 * MAXN
zs: .space 4 * MAXN
