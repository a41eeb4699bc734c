# vec_memcpy: strip-mined RVV memcpy (vsetvli e8/m8 + vle8.v/vse8.v) of N bytes (argv[1],
# default 65536) between two anonymous mmaps, checked by a scalar byte compare.
# stdout: the N copied bytes (for differential runs against qemu-riscv64).
# Exit status: 0 = copy matches, 1 = mismatch, 2 = mmap failed.
.include "syscalls.inc"
.include "rv_util.inc"
.equ PROT_RW, 3
.equ MAP_PRIVATE_ANON, 0x22
.globl _start
_start:
    mv s11, sp
    ATOI_ARG 1, 65536
    mv s0, a0                   # s0 = n
    addi a1, s0, 1              # mmap(NULL, n + 1, RW, PRIVATE|ANON): src
    li a0, 0
    li a2, PROT_RW
    li a3, MAP_PRIVATE_ANON
    li a4, -1
    li a5, 0
    SYSCALL SYS_mmap
    bltz a0, nomem
    mv s1, a0                   # s1 = src
    addi a1, s0, 1              # dst
    li a0, 0
    li a2, PROT_RW
    li a3, MAP_PRIVATE_ANON
    li a4, -1
    li a5, 0
    SYSCALL SYS_mmap
    bltz a0, nomem
    mv s2, a0                   # s2 = dst
    # src[i] = (i * 7 + (i >> 8) + 1) & 0xff
    li t0, 0
1:  bgeu t0, s0, 2f
    slli t1, t0, 3
    sub t1, t1, t0
    srli t2, t0, 8
    add t1, t1, t2
    addi t1, t1, 1
    add t3, s1, t0
    sb t1, 0(t3)
    addi t0, t0, 1
    j 1b
2:  # the vector copy: memcpy(dst, src, n)
    mv a0, s2
    mv a1, s1
    mv a2, s0
3:  vsetvli t0, a2, e8, m8, ta, ma
    vle8.v v8, (a1)
    vse8.v v8, (a0)
    add a1, a1, t0
    add a0, a0, t0
    sub a2, a2, t0
    bnez a2, 3b
    # the scalar check
    li t0, 0
4:  bgeu t0, s0, 5f
    add t1, s1, t0
    lbu t2, 0(t1)
    add t1, s2, t0
    lbu t3, 0(t1)
    bne t2, t3, bad
    addi t0, t0, 1
    j 4b
5:  add t1, s2, s0              # dst[n] must still be 0 (no overrun)
    lbu t3, 0(t1)
    bnez t3, bad
    li a0, 1                    # write(1, dst, n)
    mv a1, s2
    mv a2, s0
    SYSCALL SYS_write
    li a0, 0
    SYSCALL SYS_exit_group
bad:
    li a0, 1
    SYSCALL SYS_exit_group
nomem:
    li a0, 2
    SYSCALL SYS_exit_group
