# vec_strlen: RVV strlen (vsetvli e8/m8 + vle8ff.v + vmseq.vi + vfirst.m), checked against a
# scalar strlen on strings of many lengths and alignments, including one that ends just before
# an unmapped page (vle8ff.v must shorten vl there instead of faulting).
# stdout: for every string, the 8-byte vector length, then the final vl and mask register v0's
# first 8 bytes (for differential runs against qemu-riscv64).
# Exit status: 0 = all lengths match, 1 = mismatch, 2 = mmap/munmap failed.
.include "syscalls.inc"
.include "rv_util.inc"
.equ PAGE, 4096
.globl _start
_start:
    # two pages, unmap the second: a string ending at the first page's last byte
    li a0, 0
    li a1, 2 * PAGE
    li a2, 3
    li a3, 0x22
    li a4, -1
    li a5, 0
    SYSCALL SYS_mmap
    bltz a0, nomem
    mv s5, a0                   # s5 = guarded page
    li t0, PAGE
    add a0, s5, t0
    li a1, PAGE
    SYSCALL SYS_munmap
    bnez a0, nomem
    # buf[i] = (i % 255) + 1 for i < 4096 (no zero bytes); the guarded page likewise
    la s1, buf
    li t0, 0
    li t4, 255
1:  remu t1, t0, t4
    addi t1, t1, 1
    add t2, s1, t0
    sb t1, 0(t2)
    add t2, s5, t0
    sb t1, 0(t2)
    addi t0, t0, 1
    li t3, PAGE
    bltu t0, t3, 1b
    la s2, out                  # s2 = output cursor
    la s3, cases                # s3 = (offset, length) pairs, halfwords, ended by 0xffff
2:  lhu s4, 0(s3)               # s4 = offset
    li t0, 0xffff
    beq s4, t0, guard
    lhu s6, 2(s3)               # s6 = length
    addi s3, s3, 4
    add a0, s1, s4              # a0 = start
    add s7, a0, s6              # s7 = &terminator
    lbu s8, 0(s7)               # save the byte we overwrite
    sb zero, 0(s7)
    call check
    sb s8, 0(s7)
    j 2b
guard:
    li t0, PAGE - 1
    add t1, s5, t0
    sb zero, 0(t1)              # last byte of the mapped page is the terminator
    li t0, 100
    add a0, s5, t0
    call check
    li t0, PAGE - 1
    add a0, s5, t0              # the empty string at the very end
    call check
    # write(1, out, s2 - out)
    la a1, out
    sub a2, s2, a1
    li a0, 1
    SYSCALL SYS_write
    li a0, 0
    SYSCALL SYS_exit_group

# check: a0 = string; compares vstrlen with the scalar strlen, appends len, vl, v0[0..7] to out
check:
    mv s9, ra
    mv s10, a0
    call vstrlen
    mv s0, a0
    mv a0, s10                  # scalar strlen
    mv t0, a0
3:  lbu t1, 0(t0)
    beqz t1, 4f
    addi t0, t0, 1
    j 3b
4:  sub t0, t0, a0
    bne t0, s0, bad
    sd s0, 0(s2)
    csrr t1, vl
    sd t1, 8(s2)
    vsetivli zero, 8, e8, m1, ta, ma   # the first 8 bytes of the last mask
    addi t2, s2, 16
    vse8.v v0, (t2)
    addi s2, s2, 24
    mv ra, s9
    ret

# vstrlen: a0 = string -> a0 = length
vstrlen:
    mv a3, a0
5:  vsetvli t0, zero, e8, m8, ta, ma
    vle8ff.v v8, (a3)
    csrr t1, vl
    vmseq.vi v0, v8, 0
    vfirst.m t2, v0
    add a3, a3, t1
    bltz t2, 5b
    sub a3, a3, t1
    add a3, a3, t2
    sub a0, a3, a0
    ret

bad:
    li a0, 1
    SYSCALL SYS_exit_group
nomem:
    li a0, 2
    SYSCALL SYS_exit_group

.section .rodata
.balign 2
cases:
    .hword 0, 0,   0, 1,   1, 1,   0, 15,   3, 16,   0, 31,   0, 32,   1, 33,   7, 63
    .hword 0, 64,  5, 65,  0, 127, 0, 128,  9, 129,  0, 255,  0, 256,  2, 257,  0, 511
    .hword 0, 512, 1, 513, 0, 1000, 13, 1024, 0, 2047, 3, 3000, 0, 4000
    .hword 0xffff, 0xffff
.bss
.balign 64
buf:
    .space PAGE + 64
out:
    .space 64 * 24
