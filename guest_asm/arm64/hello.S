// hello: write(1, msg, len); exit(0)
.include "syscalls.inc"
.globl _start
_start:
    mov x0, #1
    adr x1, msg
    mov x2, #(msg_end - msg)
    mov x8, #SYS_write
    svc #0
    mov x0, #0
    mov x8, #SYS_exit_group
    svc #0
msg:
    .ascii "Hello from AArch64 EL0!\n"
msg_end:
