# threads: main starts N threads (argv[1], default 4) with clone(CLONE_VM|...|CLONE_CHILD_CLEARTID),
# pins thread i to CPU i % ncpus (argv[3], default 1) with sched_setaffinity, each thread runs a
# loop of K iterations (argv[2], default 1000) adding to its own counter; main joins each thread by
# FUTEX_WAIT on its clear_child_tid word, then exits with (sum of counters == N*K) ? 0 : 1.
.include "syscalls.inc"
.include "rv_util.inc"
.equ MAXT, 64
.equ STACK, 16384
.equ FLAGS, CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM|CLONE_PARENT_SETTID|CLONE_CHILD_CLEARTID
.globl _start
_start:
    mv s11, sp
    ATOI_ARG 1, 4
    mv s0, a0                   # N
    ATOI_ARG 2, 1000
    mv s2, a0                   # K
    ATOI_ARG 3, 1
    mv s3, a0                   # ncpus for pinning
    li s1, 0                    # i
spawn:
    bge s1, s0, join
    la t0, stacks
    addi t1, s1, 1
    li t2, STACK
    mul t1, t1, t2
    add a1, t0, t1              # top of stack i
    li a0, FLAGS
    la a2, tids
    slli t3, s1, 2
    add a2, a2, t3              # &tids[i] (parent tid and clear_child_tid)
    li a3, 0
    mv a4, a2
    SYSCALL SYS_clone
    bltz a0, fail
    beqz a0, thread
    addi s1, s1, 1
    j spawn
join:
    li s1, 0
1:  bge s1, s0, check
    la t0, tids
    slli t1, s1, 2
    add s4, t0, t1
2:  lw a2, 0(s4)
    beqz a2, 3f
    mv a0, s4
    li a1, 0                    # FUTEX_WAIT
    li a3, 0
    SYSCALL SYS_futex
    j 2b
3:  addi s1, s1, 1
    j 1b
check:
    la t0, counters
    li t1, 0
    li t2, 0
4:  bge t1, s0, 5f
    slli t3, t1, 3
    add t3, t3, t0
    ld t4, 0(t3)
    add t2, t2, t4
    addi t1, t1, 1
    j 4b
5:  mul t5, s0, s2
    li a0, 0
    beq t2, t5, 6f
    li a0, 1
6:  SYSCALL SYS_exit_group
thread:                         # s1 = my index (registers are copied by clone)
    remu t0, s1, s3
    li t1, 1
    sll t1, t1, t0
    la a2, masks
    slli t2, s1, 3
    add a2, a2, t2
    sd t1, 0(a2)
    li a0, 0
    li a1, 8
    SYSCALL SYS_sched_setaffinity
    bnez a0, fail
    la t0, counters
    slli t1, s1, 3
    add s5, t0, t1
    mv t2, s2
7:  ld t3, 0(s5)
    addi t3, t3, 1
    sd t3, 0(s5)
    addi t2, t2, -1
    bnez t2, 7b
    li a0, 0
    SYSCALL SYS_exit
fail:
    li a0, 2
    SYSCALL SYS_exit_group
.bss
.align 4
tids: .space 4*MAXT
.align 3
counters: .space 8*MAXT
masks: .space 8*MAXT
.align 4
stacks: .space STACK*(MAXT+1)
