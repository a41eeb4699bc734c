# preempt_rw: one long read() or write() on a file while another task is runnable — the copy
# loops with a cond_resched() per page (tests/kernel/test_preempt.py).
# argv[1] = path; argv[2] = 0: read N bytes from it (e.g. /dev/zero: read_iter_zero), 1: create
# it and write N bytes (generic_perform_write), 2: create it and writev N bytes as two iovecs of
# N/2, 3: readv N bytes into two iovecs of N/2; argv[3] = N (default 65536, at most 262144);
# argv[4] = iterations a forked child spins (default 400000; it stays runnable meanwhile).
# Writes the buffer (what was read, or what was written) to stdout; exit status 0 when the call
# returned N, 1 otherwise.
.include "syscalls.inc"
.include "rv_util.inc"
.equ O_WRONLY_CREAT_TRUNC, 0x241
.equ SYS_readv, 65
.equ SYS_writev, 66
.globl _start
_start:
    mv s11, sp
    ATOI_ARG 2, 0
    mv s2, a0                   # s2 = mode
    ATOI_ARG 3, 65536
    mv s3, a0                   # s3 = N
    ATOI_ARG 4, 400000
    mv s4, a0                   # s4 = spin count
    la t0, buf                  # buf[i] = 7*i + 3 (mod 256): a read must overwrite it
    li t1, 0
1:  bgeu t1, s3, 2f
    slli t2, t1, 3
    sub t2, t2, t1
    addi t2, t2, 3
    add t3, t0, t1
    sb t2, 0(t3)
    addi t1, t1, 1
    j 1b
2:  li a0, AT_FDCWD
    ld a1, 16(s11)              # argv[1]
    li a2, 0                    # O_RDONLY
    addi t0, s2, -1             # modes 1 and 2 write
    li t1, 1
    bgtu t0, t1, 3f
    li a2, O_WRONLY_CREAT_TRUNC
3:  li a3, 0644
    SYSCALL SYS_openat
    bltz a0, fail
    mv s5, a0                   # s5 = fd
    li a0, SIGCHLD              # fork: the runnable other task
    li a1, 0
    li a2, 0
    li a3, 0
    li a4, 0
    SYSCALL SYS_clone
    bltz a0, fail
    beqz a0, spinner
    SYSCALL SYS_sched_yield     # the child spins a slice; we come back with a fresh one
    la t0, iov                  # iov[0] = {buf, N/2}, iov[1] = {buf + N/2, N - N/2}
    la t1, buf
    srli t2, s3, 1
    sd t1, 0(t0)
    sd t2, 8(t0)
    add t1, t1, t2
    sd t1, 16(t0)
    sub t2, s3, t2
    sd t2, 24(t0)
    mv a0, s5
    la a1, buf
    mv a2, s3
    li a7, SYS_read
    li t0, 1
    bne s2, t0, 8f
    li a7, SYS_write
8:  li t0, 2
    bltu s2, t0, 4f
    la a1, iov                  # readv/writev(fd, iov, 2)
    li a2, 2
    li a7, SYS_readv
    li t0, 3
    beq s2, t0, 4f
    li a7, SYS_writev
4:  ecall                       # the long copy
    mv s6, a0
    li a0, 1
    la a1, buf
    mv a2, s3
    SYSCALL SYS_write
    li a0, -1
    li a1, 0
    li a2, 0
    li a3, 0
    SYSCALL SYS_wait4
    li a0, 0
    beq s6, s3, 5f
    li a0, 1
5:  SYSCALL SYS_exit_group
spinner:
    mv t0, s4
6:  addi t0, t0, -1
    bnez t0, 6b
    li a0, 0
    SYSCALL SYS_exit_group
fail:
    li a0, 1
    SYSCALL SYS_exit_group
.bss
.align 4
iov: .space 32
buf: .space 262144
