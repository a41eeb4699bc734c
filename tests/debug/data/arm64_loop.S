// arch: arm64
// arm64_loop: count down in a loop (for stepi counts and breakpoints), then exit(7)
.include "syscalls.inc"
.globl _start
_start:
    mov x1, #5
loop:
    sub x1, x1, #1
    cbnz x1, loop
after_loop:
    mov x0, #7
    mov x8, #SYS_exit_group
    svc #0
