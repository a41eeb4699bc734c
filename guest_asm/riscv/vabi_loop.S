# vabi_loop: two CPU-bound processes run a vector loop whose state lives only in vector
# registers (vl/vtype set once before the loop), so a timer preemption in the middle must
# save and restore it bit for bit.  argv[1] = iterations (default 3000).
#   v1 = vid + seed (e32, VLMAX), v2 = 0;  repeat: v2 += v1; v1 = v1 * 3 + 1
# seed is 0 in the parent and 1000 in the child (fork via clone(SIGCHLD)).  Each process then
# SNAPs its whole vector state; the child writes its snapshot to stdout first and exits, the
# parent waits for it and writes its own.  Exit status 0 on success.
.include "syscalls.inc"
.include "rv_util.inc"
.include "vabi_macros.inc"
.globl _start
_start:
    mv s11, sp
    ATOI_ARG 1, 3000
    mv s3, a0
    li a0, SIGCHLD
    li a1, 0
    li a2, 0
    li a3, 0
    li a4, 0
    SYSCALL SYS_clone
    bltz a0, fail
    mv s4, a0                   # 0 in the child
    li s5, 0
    bnez s4, 1f
    li s5, 1000
1:  vsetvli t0, zero, e32, m1, ta, ma
    vid.v v1
    vadd.vx v1, v1, s5
    vmv.v.i v2, 0
    li t5, 3
loop:
    vadd.vv v2, v2, v1
    vmul.vx v1, v1, t5
    vadd.vi v1, v1, 1
    addi s3, s3, -1
    bnez s3, loop
    la s1, snap
    SNAP s1
    beqz s4, out
    li a0, -1
    la a1, status
    li a2, 0
    li a3, 0
    SYSCALL SYS_wait4
    bltz a0, fail
    lw t0, status
    bnez t0, fail
out:
    li a0, 1
    la a1, snap
    sub a2, s1, a1
    SYSCALL SYS_write
    li a0, 0
    SYSCALL SYS_exit_group
fail:
    li a0, 1
    SYSCALL SYS_exit_group
.data
.align 3
status: .space 8
.bss
.align 6
snap: .space 32 + 32 * 512
