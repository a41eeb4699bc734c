# preempt_pipe: a large write() into a pipe while another task is runnable — the copy a timer tick
# can fall inside (tests/kernel/test_preempt.py, --kconfig PREEMPT=none|voluntary|full).
# argv[1] = bytes to write (default 65536, at most 65536: one pipe's capacity, so the write never
# blocks); argv[2] = iterations the reader spins before reading (default 200000; it stays
# runnable meanwhile); argv[3] = 1: the reader's spin loop writes vector registers (PATTERN
# P(0xA0) each iteration), so it changes the register file while the writer is switched out.
# The reader (a forked child) writes every byte it read to stdout.  The
# writer: SNAP S0 (first use), sched_yield (a fresh time slice), PATTERN P(0x10), SNAP S1,
# write(N), SNAP S2, then the snapshots (vabi_macros.inc) to stderr.  Exit status 0, or 1 if the
# write did not return N or a syscall failed.
.include "syscalls.inc"
.include "rv_util.inc"
.include "vabi_macros.inc"
.globl _start
_start:
    mv s11, sp
    ATOI_ARG 1, 65536
    mv s3, a0                   # s3 = N
    ATOI_ARG 2, 200000
    mv s4, a0                   # s4 = reader's spin count
    ATOI_ARG 3, 0
    mv s7, a0                   # s7 = 1: the reader spins with vector instructions
    la a0, pfd
    li a1, 0
    SYSCALL SYS_pipe2
    bnez a0, fail
    la t0, data                 # data[i] = 7*i + 3 (mod 256)
    li t1, 0
1:  bgeu t1, s3, 2f
    slli t2, t1, 3
    sub t2, t2, t1
    addi t2, t2, 3
    add t3, t0, t1
    sb t2, 0(t3)
    addi t1, t1, 1
    j 1b
2:  li a0, SIGCHLD              # fork
    li a1, 0
    li a2, 0
    li a3, 0
    li a4, 0
    SYSCALL SYS_clone
    bltz a0, fail
    beqz a0, reader
writer:
    lw a0, pfd
    SYSCALL SYS_close
    la s1, snaps
    SNAP s1                     # S0: first use
    SYSCALL SYS_sched_yield     # the reader spins a slice; we come back with a fresh one
    li s2, 0x10
    PATTERN s2
    SNAP s1                     # S1: P
    lw a0, pfd+4
    la a1, data
    mv a2, s3
    SYSCALL SYS_write           # the long copy
    mv s5, a0
    SNAP s1                     # S2: after write(N)
    lw a0, pfd+4
    SYSCALL SYS_close           # the reader sees end-of-file after the data
    li a0, -1
    li a1, 0
    li a2, 0
    li a3, 0
    SYSCALL SYS_wait4
    li a0, 2
    la a1, snaps
    sub a2, s1, a1
    SYSCALL SYS_write
    li a0, 0
    beq s5, s3, 3f
    li a0, 1
3:  SYSCALL SYS_exit_group
reader:
    lw a0, pfd+4
    SYSCALL SYS_close
    mv s8, s4
    li s9, 0xA0
4:  beqz s7, 7f
    PATTERN s9
7:  addi s8, s8, -1
    bnez s8, 4b
    li s6, 0                    # bytes read so far
5:  lw a0, pfd
    la a1, rbuf
    add a1, a1, s6
    li a2, 65536
    SYSCALL SYS_read
    bltz a0, fail
    beqz a0, 6f
    add s6, s6, a0
    j 5b
6:  li a0, 1
    la a1, rbuf
    mv a2, s6
    SYSCALL SYS_write
    li a0, 0
    SYSCALL SYS_exit_group
fail:
    li a0, 1
    SYSCALL SYS_exit_group
.bss
.align 4
pfd: .space 8
data: .space 65536
rbuf: .space 131072
snaps: .space 3 * (32 + 32 * 512)
