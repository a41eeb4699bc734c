// arch: arm64
// Writes "hi\n" and exits 7; uses SVE (rdvl) so only llvm-mc can assemble it.
.include "test_syscalls.inc"
.include "local_consts.inc"
    .text
    .globl _start
_start:
    rdvl    x9, #1
    mov     x0, #1
    adr     x1, msg
    mov     x2, #MSG_LEN
    mov     x8, #SYS_write
    svc     #0
    mov     x0, #EXIT_CODE
    mov     x8, #SYS_exit
    svc     #0
    .data
    .globl msg
msg:
    .ascii "hi\n"
    .bss
buf:
    .zero 8192
