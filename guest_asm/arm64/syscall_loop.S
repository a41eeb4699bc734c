// syscall_loop: getppid() N times (argv[1], default 100000) — the null-syscall round trip.
.include "syscalls.inc"
.include "a64_util.inc"
.globl _start
_start:
    mov x28, sp
    ATOI_ARG 1, 100000
    mov x19, x0
.globl sys_loop
sys_loop:
1:  mov x8, #SYS_getppid
    svc #0
    subs x19, x19, #1
    b.ne 1b
.globl sys_loop_end
sys_loop_end:
    mov x0, #0
    SYSCALL SYS_exit_group
