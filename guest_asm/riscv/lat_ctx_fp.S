# lat_ctx_fp: lat_ctx with FP state — two processes ping-pong one byte over two pipes, N round
# trips (argv[1], default 1000).  The parent keeps 1.5 in f1 (written once, never again); the
# child writes its own f1 (= round number, fcvt.d.l) every round, so its FP context is Dirty at
# every switch while the parent's stays Clean.  Each side checks its f1 every round: a lost or
# cross-wired FP context exits 1 (2 in the child).  Exit status 0 on success.
.include "syscalls.inc"
.include "rv_util.inc"
.globl _start
_start:
    mv s11, sp
    ATOI_ARG 1, 1000
    mv s0, a0                   # s0 = iterations
    la a0, p1
    li a1, 0
    SYSCALL SYS_pipe2
    bnez a0, fail
    la a0, p2
    li a1, 0
    SYSCALL SYS_pipe2
    bnez a0, fail
    li t0, 0x3FF8000000000000   # 1.5
    fmv.d.x f1, t0
    li a0, SIGCHLD              # fork
    li a1, 0
    li a2, 0
    li a3, 0
    li a4, 0
    SYSCALL SYS_clone
    bltz a0, fail
    beqz a0, child
parent:
    mv s1, s0
    li s2, 0x3FF8000000000000
1:  lw a0, p1+4                 # write end of p1
    la a1, buf
    li a2, 1
    SYSCALL SYS_write
    li t0, 1
    bne a0, t0, fail
    lw a0, p2                   # read end of p2
    la a1, buf
    li a2, 1
    SYSCALL SYS_read
    li t0, 1
    bne a0, t0, fail
    fmv.x.d t1, f1              # a read: FS stays Clean
    bne t1, s2, fail
    addi s1, s1, -1
    bnez s1, 1b
    li a0, -1
    la a1, status
    li a2, 0
    li a3, 0
    SYSCALL SYS_wait4
    bltz a0, fail
    lw a0, status
    srli a0, a0, 8
    SYSCALL SYS_exit_group
child:
    fmv.x.d t1, f1              # fork copied the parent's FP context
    li t0, 0x3FF8000000000000
    bne t1, t0, cfail
    mv s1, s0
2:  fcvt.d.l f1, s1             # a write: FS becomes Dirty
    lw a0, p1
    la a1, buf
    li a2, 1
    SYSCALL SYS_read
    li t0, 1
    bne a0, t0, cfail
    fcvt.l.d t1, f1
    bne t1, s1, cfail
    lw a0, p2+4
    la a1, buf
    li a2, 1
    SYSCALL SYS_write
    addi s1, s1, -1
    bnez s1, 2b
    li a0, 0
    SYSCALL SYS_exit_group
cfail:
    li a0, 2
    SYSCALL SYS_exit_group
fail:
    li a0, 1
    SYSCALL SYS_exit_group
.bss
.align 3
p1: .space 8
p2: .space 8
status: .space 8
buf: .space 8
