// sve_timeout: use SVE once, then sched_yield YIELDS times while a child process also yields
// (every yield switches tasks, so each return reloads FPSIMD-only state saved in the syscall), then
// dump Z/P/FFR: whichever way TIF_SVE was dropped, the next SVE instruction traps again and sees
// Z above 128, P and FFR zero.  Writes the dump (4096 bytes) to stdout; exit 0.
.include "syscalls.inc"
.include "sve_util.inc"
.equ YIELDS, 400
.globl _start
_start:
    mov x0, #SIGCHLD
    mov x1, #0
    mov x2, #0
    mov x3, #0
    mov x4, #0
    mov x8, #SYS_clone
    svc #0
    cbz x0, child
    SVE_FILL 5
    ldr x19, =YIELDS
1:  mov x8, #SYS_sched_yield
    svc #0
    subs x19, x19, #1
    b.ne 1b
    adr x20, dump
    SVE_DUMP x20
    mov x0, #-1
    mov x1, #0
    mov x2, #0
    mov x3, #0
    mov x8, #SYS_wait4
    svc #0
    mov x0, #1
    adr x1, dump
    mov x2, #4096
    mov x8, #SYS_write
    svc #0
    mov x0, #0
    mov x8, #SYS_exit_group
    svc #0
child:
    ldr x19, =(YIELDS + 20)
2:  mov x8, #SYS_sched_yield
    svc #0
    subs x19, x19, #1
    b.ne 2b
    mov x0, #0
    mov x8, #SYS_exit_group
    svc #0
.ltorg
.data
.balign 64
dump: .space 4096
