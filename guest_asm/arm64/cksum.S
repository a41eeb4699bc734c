// cksum: N passes (argv[1], default 1000) of a rotate-xor-add checksum over a 4 KiB buffer that is
// written back as it goes -- typical compiled code (7-instruction blocks with a load and a store)
// for the MIPS benchmark, beside spin.S's worst case of 2-instruction blocks.
.include "syscalls.inc"
.include "a64_util.inc"
.globl _start
_start:
    mov x28, sp
    ATOI_ARG 1, 1000
    mov x19, x0
.globl cksum_loop
cksum_loop:
    adrp x20, buf
    add x20, x20, :lo12:buf
    mov x1, #1
    mov x2, #0
1:  mov x3, x20
    mov x4, #512
2:  ldr x5, [x3], #8
    eor x5, x5, x1, ror #7
    add x1, x1, x5
    add x2, x2, x1
    str x5, [x3, #-8]
    subs x4, x4, #1
    b.ne 2b
    subs x19, x19, #1
    b.ne 1b
.globl cksum_loop_end
cksum_loop_end:
    mov x0, #0
    SYSCALL SYS_exit_group

.bss
.balign 4096
buf: .skip 4096
