# sig_loop: N (argv[1], default 10000) signal round trips — kill(getpid(), SIGUSR1) delivers on
# the syscall's return, the empty handler returns through the sigreturn trampoline, rt_sigreturn
# brings the loop back.  The bench divides by a null syscall (syscall_loop.S) of the same run.
.include "syscalls.inc"
.include "rv_util.inc"
.globl _start
_start:
    mv s11, sp
    ATOI_ARG 1, 10000
    mv s0, a0
    li a7, 134                  # rt_sigaction(SIGUSR1, &act, NULL, 8)
    li a0, 10
    la a1, act
    li a2, 0
    li a3, 8
    ecall
    li a7, 172                  # getpid
    ecall
    mv s1, a0
1:  mv a0, s1
    li a1, 10
    li a7, 129                  # kill
    ecall
    addi s0, s0, -1
    bnez s0, 1b
    li a0, 0
    SYSCALL SYS_exit_group
handler:
    ret
.data
.balign 16
act: .dword handler, 0, 0
