# vabi_ucopy: user vector state across a large write()/read() — the copies that Linux >= 6.8
# vectorises with kernel-mode vector (enter_vector_usercopy) at or above
# CONFIG_RISCV_ISA_V_UCOPY_THRESHOLD (768 bytes by default).
# argv[1] = bytes to write into a pipe and read back (default 4096, at most 65536).
# Snapshots (SNAP, vabi_macros.inc): S0 first use, S1 pattern P(0x10), S2 after write(N),
# S3 after read(N); all written to stdout at the end.  Exit status 0, or 1 if a syscall failed.
.include "syscalls.inc"
.include "rv_util.inc"
.include "vabi_macros.inc"
.globl _start
_start:
    mv s11, sp
    ATOI_ARG 1, 4096
    mv s3, a0                   # s3 = N
    la a0, pfd
    li a1, 0
    SYSCALL SYS_pipe2
    bnez a0, fail
    la s1, snaps
    SNAP s1                     # S0: first use
    li s2, 0x10
    PATTERN s2
    SNAP s1                     # S1: P
    lw a0, pfd+4
    la a1, data
    mv a2, s3
    SYSCALL SYS_write           # copy_from_user(N)
    bne a0, s3, fail
    SNAP s1                     # S2
    lw a0, pfd
    la a1, data
    mv a2, s3
    SYSCALL SYS_read            # copy_to_user(N)
    bne a0, s3, fail
    SNAP s1                     # S3
    li a0, 1
    la a1, snaps
    sub a2, s1, a1
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
snaps: .space 4 * (32 + 32 * 512)
