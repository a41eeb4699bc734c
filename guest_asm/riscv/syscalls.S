# syscalls: exercise every syscall emukern's foundation implements and record failures.
# Bit i of `failmask` is set when check i fails; exit status = number of failed checks.
.include "syscalls.inc"
.include "rv_util.inc"
.macro CHECK_EQ bit, val
    li t6, \val
    beq a0, t6, 1f
    li t5, 1
    slli t5, t5, \bit
    or s10, s10, t5
1:
.endm
.macro CHECK_GE bit, val
    li t6, \val
    bge a0, t6, 1f
    li t5, 1
    slli t5, t5, \bit
    or s10, s10, t5
1:
.endm
.globl _start
_start:
    li s10, 0
    SYSCALL SYS_getpid
    CHECK_EQ 0, 1
    SYSCALL SYS_getppid
    CHECK_EQ 1, 0
    SYSCALL SYS_gettid
    CHECK_EQ 2, 1
    li a0, 1                        # CLOCK_MONOTONIC
    la a1, ts0
    SYSCALL SYS_clock_gettime
    CHECK_EQ 3, 0
    la a0, req_1ms
    li a1, 0
    SYSCALL SYS_nanosleep
    CHECK_EQ 4, 0
    li a0, 1
    la a1, ts1
    SYSCALL SYS_clock_gettime
    ld t0, ts0+8
    ld t1, ts1+8
    ld t2, ts0
    ld t3, ts1
    sub t3, t3, t2
    li t4, 1000000000
    mul t3, t3, t4
    add t1, t1, t3
    sub a0, t1, t0                  # elapsed ns
    CHECK_GE 5, 1000000
    li a0, 1
    li a1, 0
    la a2, req_1us
    li a3, 0
    SYSCALL SYS_clock_nanosleep
    CHECK_EQ 6, 0
    SYSCALL SYS_sched_yield
    CHECK_EQ 7, 0
    li a0, 0
    SYSCALL SYS_brk
    mv s1, a0
    li t0, 8192
    add a0, s1, t0
    mv s2, a0
    SYSCALL SYS_brk
    sub a0, a0, s2
    CHECK_EQ 8, 0
    li t0, 0x5a
    sb t0, 100(s1)                  # the new heap is writable
    li a0, 0
    li a1, 8192
    li a2, 3                        # PROT_READ|PROT_WRITE
    li a3, 0x22                     # MAP_PRIVATE|MAP_ANONYMOUS
    li a4, -1
    li a5, 0
    SYSCALL SYS_mmap
    mv s3, a0
    CHECK_GE 9, 4096
    li t0, 0x77
    sd t0, 0(s3)
    mv a0, s3
    li a1, 8192
    SYSCALL SYS_munmap
    CHECK_EQ 10, 0
    la a0, uts
    SYSCALL SYS_uname
    CHECK_EQ 11, 0
    lw a0, uts                      # "Linu"
    li t0, 0x756e694c
    sub a0, a0, t0
    CHECK_EQ 12, 0
    li a0, 0x7777
    SYSCALL SYS_prctl
    CHECK_EQ 13, -22                # -EINVAL
    li a0, AT_FDCWD
    la a1, path_discard
    li a2, 2                        # O_RDWR
    SYSCALL SYS_openat
    mv s4, a0
    CHECK_GE 14, 3
    mv a0, s4
    la a1, rbuf
    li a2, 16
    SYSCALL SYS_read
    CHECK_EQ 15, 2                  # "0\n"
    lbu a0, rbuf
    CHECK_EQ 16, 0x30
    mv a0, s4                       # back to 0: Linux ignores writes at a non-zero position
    li a1, 0                        # (kernel.sysctl_writes_strict=1, the default)
    li a2, 0
    SYSCALL 62                      # lseek(fd, 0, SEEK_SET)
    mv a0, s4
    la a1, one
    li a2, 1
    SYSCALL SYS_write
    CHECK_EQ 17, 1
    mv a0, s4
    li a1, 0
    li a2, 0
    SYSCALL 62                      # lseek(fd, 0, SEEK_SET): else the next write is ignored
    mv a0, s4
    la a1, seven
    li a2, 1
    SYSCALL SYS_write
    CHECK_EQ 18, -22                # not a number -> -EINVAL
    mv a0, s4
    SYSCALL SYS_close
    CHECK_EQ 19, 0
    li a0, AT_FDCWD
    la a1, path_discard
    li a2, 0
    SYSCALL SYS_openat
    mv s4, a0
    la a1, rbuf
    li a2, 16
    SYSCALL SYS_read
    lbu a0, rbuf
    CHECK_EQ 20, 0x31               # now "1\n"
    mv a0, s4
    SYSCALL SYS_close
    li a0, AT_FDCWD
    la a1, path_missing
    li a2, 0
    SYSCALL SYS_openat
    CHECK_EQ 21, -2                 # -ENOENT
    li a0, 99
    la a1, rbuf
    li a2, 1
    SYSCALL SYS_read
    CHECK_EQ 22, -9                 # -EBADF
    li a0, 1
    li a1, 16                       # a wild pointer
    li a2, 5
    SYSCALL SYS_write
    CHECK_EQ 23, -14                # -EFAULT
    SYSCALL 999
    CHECK_EQ 24, -38                # -ENOSYS
    la t0, failmask
    sd s10, 0(t0)
    li a0, 1
    la a1, done
    li a2, 14
    SYSCALL SYS_write
    mv a0, zero                     # exit status = popcount(failmask)
    mv t0, s10
2:  beqz t0, 3f
    andi t1, t0, 1
    add a0, a0, t1
    srli t0, t0, 1
    j 2b
3:  SYSCALL SYS_exit_group
.section .rodata
req_1ms: .dword 0, 1000000
req_1us: .dword 0, 1000
path_discard: .asciz "/proc/sys/abi/riscv_v_vstate_discard"
path_missing: .asciz "/proc/sys/abi/no_such_knob"
one: .ascii "1"
seven: .ascii "x"
done: .ascii "syscalls done\n"
.data
.align 3
.globl failmask
failmask: .dword -1
ts0: .dword 0, 0
ts1: .dword 0, 0
rbuf: .space 16
uts: .space 390
