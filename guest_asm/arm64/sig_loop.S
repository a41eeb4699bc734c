// sig_loop: N (argv[1], default 10000) signal round trips — kill(getpid(), SIGUSR1) delivers on
// the syscall's return, the empty handler returns through the sigreturn trampoline, rt_sigreturn
// brings the loop back.  The bench divides by a null syscall (syscall_loop.S) of the same run.
.include "syscalls.inc"
.include "a64_util.inc"
.globl _start
_start:
    mov x28, sp
    ATOI_ARG 1, 10000
    mov x19, x0
    mov x0, #10                 // rt_sigaction(SIGUSR1, &act, NULL, 8)
    adr x1, act
    mov x2, #0
    mov x3, #8
    mov x8, #134
    svc #0
    mov x8, #172                // getpid
    svc #0
    mov x20, x0
1:  mov x0, x20
    mov x1, #10
    mov x8, #129                // kill
    svc #0
    subs x19, x19, #1
    b.ne 1b
    mov x0, #0
    SYSCALL SYS_exit_group
handler:
    ret
.data
.balign 16
act: .dword handler, 0, 0, 0
