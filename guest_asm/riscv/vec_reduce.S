# vec_reduce: strip-mined RVV reductions over N int32 values (argv[1], default 999; at most
# 65536): vredsum/vredmax/vredmin/vredmaxu/vredminu/vredand/vredor/vredxor.vs at e32/m2, a
# masked vredsum of the positive elements (vmsgt.vi + v0.t), and vredsum/vredmaxu.vs at e16/m1
# over the same bytes seen as 2N halfwords.  The running result is carried in element 0 of vs1
# across chunks.  Each result is checked against a scalar loop.
# stdout: the 11 results as 8-byte little-endian words (for differential runs against qemu).
# Exit status: 0 = all match, 10+k = result k differs, 3 = N too large.
.include "syscalls.inc"
.include "rv_util.inc"
.equ MAXN, 65536
.equ NRES, 11
.globl _start
_start:
    mv s11, sp
    ATOI_ARG 1, 999
    mv s0, a0                   # s0 = n
    li t0, MAXN
    bgtu s0, t0, toobig
    la s1, data
    # data[i] = (i * 0x9E3779B1) ^ (i << 7), as int32: signed and unsigned extremes both occur
    li t0, 0
    li t4, 0x9E3779B1
1:  bgeu t0, s0, 2f
    mul t2, t0, t4
    slli t3, t0, 7
    xor t2, t2, t3
    slli t1, t0, 2
    add t1, s1, t1
    sw t2, 0(t1)
    addi t0, t0, 1
    j 1b
2:  # accumulators (element 0 of v1..v7, v24, v25)
    vsetivli zero, 1, e32, m1, ta, ma
    vmv.s.x v1, zero            # sum
    li t0, 0x80000000
    vmv.s.x v2, t0              # max  (INT32_MIN)
    li t0, 0x7fffffff
    vmv.s.x v3, t0              # min  (INT32_MAX)
    vmv.s.x v4, zero            # maxu
    li t0, -1
    vmv.s.x v5, t0              # minu
    vmv.s.x v6, t0              # and
    vmv.s.x v7, zero            # or
    vmv.s.x v24, zero           # xor
    vmv.s.x v25, zero           # masked sum of positives
    mv a0, s0
    mv a1, s1
3:  vsetvli t0, a0, e32, m2, ta, mu
    vle32.v v8, (a1)
    vredsum.vs v1, v8, v1
    vredmax.vs v2, v8, v2
    vredmin.vs v3, v8, v3
    vredmaxu.vs v4, v8, v4
    vredminu.vs v5, v8, v5
    vredand.vs v6, v8, v6
    vredor.vs v7, v8, v7
    vredxor.vs v24, v8, v24
    vmsgt.vi v0, v8, 0
    vredsum.vs v25, v8, v25, v0.t
    slli t1, t0, 2
    add a1, a1, t1
    sub a0, a0, t0
    bnez a0, 3b
    # e16 pass over 2n halfwords
    vsetivli zero, 1, e16, m1, ta, ma
    vmv.s.x v26, zero
    vmv.s.x v27, zero
    slli a0, s0, 1
    mv a1, s1
4:  vsetvli t0, a0, e16, m1, ta, ma
    vle16.v v10, (a1)
    vredsum.vs v26, v10, v26
    vredmaxu.vs v27, v10, v27
    slli t1, t0, 1
    add a1, a1, t1
    sub a0, a0, t0
    bnez a0, 4b
    # move the results out (sign-extended by vmv.x.s)
    la s2, vres
    vsetivli zero, 1, e32, m1, ta, ma
    .irp r, 1, 2, 3, 4, 5, 6, 7, 24, 25
    vmv.x.s t0, v\r
    sd t0, 0(s2)
    addi s2, s2, 8
    .endr
    vsetivli zero, 1, e16, m1, ta, ma
    vmv.x.s t0, v26
    sd t0, 0(s2)
    vmv.x.s t0, v27
    sd t0, 8(s2)
    # scalar reference: s3 sum, s4 max, s5 min, s6 maxu, s7 minu, s8 and, s9 or, s10 xor,
    # a6 masked sum (all as sign-extended int32 like vmv.x.s)
    li s3, 0
    li s4, -0x80000000
    li s5, 0x7fffffff
    li s6, 0
    li s7, -1
    li s8, -1
    li s9, 0
    li s10, 0
    li a6, 0
    li t0, 0
5:  bgeu t0, s0, 6f
    slli t1, t0, 2
    add t1, s1, t1
    lw t2, 0(t1)                # signed
    lwu t3, 0(t1)               # unsigned
    addw s3, s3, t2
    bge s4, t2, 7f
    mv s4, t2
7:  ble s5, t2, 7f
    mv s5, t2
7:  slli t4, s6, 32
    srli t4, t4, 32
    bgeu t4, t3, 7f
    mv s6, t2
7:  slli t4, s7, 32
    srli t4, t4, 32
    bleu t4, t3, 7f
    mv s7, t2
7:  and s8, s8, t2
    or s9, s9, t2
    xor s10, s10, t2
    blez t2, 7f
    addw a6, a6, t2
7:  addi t0, t0, 1
    j 5b
6:  la s2, sres
    sd s3, 0(s2)
    sd s4, 8(s2)
    sd s5, 16(s2)
    sd s6, 24(s2)
    sd s7, 32(s2)
    sd s8, 40(s2)
    sd s9, 48(s2)
    sd s10, 56(s2)
    sd a6, 64(s2)
    # e16: sum (wrapping, sign-extended from 16 bits) and unsigned max of the halfwords
    li s3, 0
    li s4, 0
    li t0, 0
    slli t5, s0, 1
8:  bgeu t0, t5, 9f
    slli t1, t0, 1
    add t1, s1, t1
    lhu t2, 0(t1)
    add s3, s3, t2
    bgeu s4, t2, 7f
    mv s4, t2
7:  addi t0, t0, 1
    j 8b
9:  slli s3, s3, 48
    srai s3, s3, 48
    slli s4, s4, 48
    srai s4, s4, 48
    sd s3, 72(s2)
    sd s4, 80(s2)
    # compare
    la a1, vres
    la a2, sres
    li t0, 0
10: ld t1, 0(a1)
    ld t2, 0(a2)
    bne t1, t2, bad
    addi a1, a1, 8
    addi a2, a2, 8
    addi t0, t0, 1
    li t3, NRES
    bltu t0, t3, 10b
    li a0, 1
    la a1, vres
    li a2, 8 * NRES
    SYSCALL SYS_write
    li a0, 0
    SYSCALL SYS_exit_group
bad:
    addi a0, t0, 10
    SYSCALL SYS_exit_group
toobig:
    li a0, 3
    SYSCALL SYS_exit_group
.bss
.balign 64
vres: .space 8 * NRES
sres: .space 8 * NRES
data: .space 4 * MAXN
