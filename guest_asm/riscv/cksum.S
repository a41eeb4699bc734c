# cksum: N passes (argv[1], default 1000) of a shift-xor-add checksum over a 4 KiB buffer that is
# written back as it goes -- typical compiled code (9-instruction blocks with a load and a store)
# for the MIPS benchmark, beside spin.S's worst case of 2-instruction blocks.
.include "syscalls.inc"
.include "rv_util.inc"
.globl _start
_start:
    mv s11, sp
    ATOI_ARG 1, 1000
    mv s0, a0
.globl cksum_loop
cksum_loop:
    la s1, buf
    li t1, 1
    li t2, 0
1:  mv t3, s1
    li t4, 512
2:  ld t5, 0(t3)
    srli t6, t1, 7
    xor t5, t5, t6
    add t1, t1, t5
    add t2, t2, t1
    sd t5, 0(t3)
    addi t3, t3, 8
    addi t4, t4, -1
    bnez t4, 2b
    addi s0, s0, -1
    bnez s0, 1b
.globl cksum_loop_end
cksum_loop_end:
    li a0, 0
    SYSCALL SYS_exit_group

.bss
.balign 4096
buf: .skip 4096
