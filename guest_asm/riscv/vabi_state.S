# vabi_state: what user vector state looks like across syscalls, blocking and preemption.
# argv[1] selects the scenario; every scenario appends snapshots (SNAP, see vabi_macros.inc) to
# `snaps` and writes them all to stdout at the end (one write, so the dump itself cannot disturb
# what it records).  Exit status 0 on success, 1 if a syscall failed.
#   1  syscall: S0 first use, S1 pattern P(0x10), S2 after getppid, S3 after a second getppid
#   2  block:   fork; parent sets P0(0x20), S0, spins until a timer tick preempts it (child runs
#              and blocks on pipe 2), wakes the child, sets P(0x30), S1, blocks in read(pipe 1);
#              the child sets Q(0x40) (first use) and writes pipe 1; parent S2 after the read.
#   3  preempt-after-syscall: fork; parent sets P(0x50), S0, getppid, S1, then spins (scalar only)
#              until a tick preempts it; the child sets Q(0x60) and exits; parent S2.
#   4  fork: parent sets P(0x70) first; the child's first vector access SNAPs S0 (its own zeroed
#              context, not the parent's registers) and writes it; the parent writes nothing.
#   argv[2] = spin iterations for 2 and 3 (default 300000; with --hz 10000 that spans 6 ticks).
.include "syscalls.inc"
.include "rv_util.inc"
.include "vabi_macros.inc"
.globl _start
_start:
    mv s11, sp
    ATOI_ARG 2, 300000
    mv s9, a0                   # spin count
    ATOI_ARG 1, 1
    la s1, snaps
    li t0, 1
    beq a0, t0, mode_syscall
    li t0, 2
    beq a0, t0, mode_block
    li t0, 3
    beq a0, t0, mode_preempt
    li t0, 4
    beq a0, t0, mode_fork
    j fail

mode_syscall:
    SNAP s1                     # S0: first use (the first csrr traps)
    li s2, 0x10
    PATTERN s2
    SNAP s1                     # S1: P
    SYSCALL SYS_getppid
    SNAP s1                     # S2: after one syscall
    SYSCALL SYS_getppid
    SNAP s1                     # S3: after a second syscall, no vector write in between
    j finish

mode_block:
    la a0, p1
    li a1, 0
    SYSCALL SYS_pipe2
    bnez a0, fail
    la a0, p2
    li a1, 0
    SYSCALL SYS_pipe2
    bnez a0, fail
    li a0, SIGCHLD
    li a1, 0
    li a2, 0
    li a3, 0
    li a4, 0
    SYSCALL SYS_clone
    bltz a0, fail
    beqz a0, block_child
    li s2, 0x20
    PATTERN s2                  # P0 (first use, VS Dirty)
    SNAP s1                     # S0
    mv t0, s9
1:  addi t0, t0, -1             # a tick preempts us here with VS Dirty: P0 is saved
    bnez t0, 1b
    lw a0, p2+4
    la a1, byte
    li a2, 1
    SYSCALL SYS_write           # wake the child
    li t0, 1
    bne a0, t0, fail
    li s2, 0x30
    PATTERN s2                  # P (VS Dirty)
    SNAP s1                     # S1
    lw a0, p1
    la a1, byte
    li a2, 1
    SYSCALL SYS_read            # blocks: the child runs and uses V
    li t0, 1
    bne a0, t0, fail
    SNAP s1                     # S2
    j reap
block_child:
    lw a0, p2
    la a1, byte
    li a2, 1
    SYSCALL SYS_read            # blocks until the parent is done spinning
    li s2, 0x40
    PATTERN s2                  # Q: the child's first use; the physical registers change
    lw a0, p1+4
    la a1, byte
    li a2, 1
    SYSCALL SYS_write
    li a0, 0
    SYSCALL SYS_exit_group

mode_preempt:
    li a0, SIGCHLD
    li a1, 0
    li a2, 0
    li a3, 0
    li a4, 0
    SYSCALL SYS_clone
    bltz a0, fail
    beqz a0, preempt_child
    li s2, 0x50
    PATTERN s2                  # P
    SNAP s1                     # S0
    SYSCALL SYS_getppid
    SNAP s1                     # S1
    mv t0, s9
1:  addi t0, t0, -1             # scalar only: VS stays what the syscall left
    bnez t0, 1b
    SNAP s1                     # S2
    j reap
preempt_child:
    li s2, 0x60
    PATTERN s2
    li a0, 0
    SYSCALL SYS_exit_group

mode_fork:
    li s2, 0x70
    PATTERN s2                  # the parent's registers are live when it forks
    li a0, SIGCHLD
    li a1, 0
    li a2, 0
    li a3, 0
    li a4, 0
    SYSCALL SYS_clone
    bltz a0, fail
    beqz a0, fork_child
    li a0, -1
    la a1, status
    li a2, 0
    li a3, 0
    SYSCALL SYS_wait4
    bltz a0, fail
    lw a0, status
    srli a0, a0, 8
    SYSCALL SYS_exit_group
fork_child:
    SNAP s1                     # S0: copy_thread turned VS off: this is the child's first use
    j finish

reap:
    li a0, -1
    la a1, status
    li a2, 0
    li a3, 0
    SYSCALL SYS_wait4
    bltz a0, fail
    lw t0, status
    bnez t0, fail
finish:
    li a0, 1
    la a1, snaps
    sub a2, s1, a1
    SYSCALL SYS_write
    li a0, 0
    SYSCALL SYS_exit_group
fail:
    li a0, 1
    SYSCALL SYS_exit_group

.data
.align 3
p1: .space 8
p2: .space 8
status: .space 8
byte: .space 8
.bss
.align 6
snaps: .space 8 * (32 + 32 * 512)
