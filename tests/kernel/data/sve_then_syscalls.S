// arch: arm64
// sve_then_syscalls N: one SVE instruction (SVE access trap), N getpid syscalls, SVE again, exit
.include "syscalls.inc"
.globl _start
_start:
    ldr x1, [sp, #16]              // argv[1]
    mov x19, #0
parse:
    ldrb w2, [x1], #1
    cbz w2, parsed
    sub w2, w2, #'0'
    mov x3, #10
    madd x19, x19, x3, x2
    b parse
parsed:
    rdvl x20, #1
loop:
    cbz x19, again
    mov x8, #SYS_getpid
    svc #0
    sub x19, x19, #1
    b loop
again:
    rdvl x21, #1
    mov x0, #0
    mov x8, #SYS_exit_group
    svc #0
