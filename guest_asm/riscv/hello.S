# hello: write(1, msg, len); exit(0)
.include "syscalls.inc"
.globl _start
_start:
    li a0, 1
    la a1, msg
    li a2, 29
    li a7, SYS_write
    ecall
    li a0, 0
    li a7, SYS_exit_group
    ecall
.section .rodata
msg:
    .ascii "Hello from RISC-V user mode!\n"
msg_end:
