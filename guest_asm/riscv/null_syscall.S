# null_syscall: the seed 000 benchmark — vsetvli, then getppid() in a loop.
# argv[1] = iterations (default 10000); argv[2] = 1 to execute the vsetvli in every iteration
# (default 0: once before the loop, like `null_syscall --vsetvli`).
# The loop is timed with rdcycle; stdout gets one line: "cycles=<elapsed cycles> iterations=<n>".
.include "syscalls.inc"
.include "rv_util.inc"
.globl _start
_start:
    mv s11, sp
    ATOI_ARG 1, 10000
    mv s0, a0
    ATOI_ARG 2, 0
    mv s2, a0
    vsetvli t0, zero, e32, m1, ta, ma   # first use: the task now has live vector state
    mv s1, s0
    rdcycle s3
1:  beqz s2, 2f
    vsetvli t0, zero, e32, m1, ta, ma
2:  SYSCALL SYS_getppid
    addi s1, s1, -1
    bnez s1, 1b
    rdcycle s4
    sub s4, s4, s3
    WRITE_UDEC2 s4, s0, cycles, iterations   # "cycles=<elapsed> iterations=<n>\n"
    li a0, 0
    SYSCALL SYS_exit_group
.bss
.align 3
