// syscalls: exercise every syscall emukern's foundation implements and record failures.
// Bit i of `failmask` is set when check i fails; exit status = number of failed checks.
.include "syscalls.inc"
.include "a64_util.inc"
.macro CHECK_EQ bit, val
    mov x15, #\val
    cmp x0, x15
    b.eq 1f
    orr x27, x27, #(1 << \bit)
1:
.endm
.macro CHECK_GE bit, val
    ldr x15, =\val
    cmp x0, x15
    b.ge 1f
    orr x27, x27, #(1 << \bit)
1:
.endm
.globl _start
_start:
    mov x27, #0
    SYSCALL SYS_getpid
    CHECK_EQ 0, 1
    SYSCALL SYS_getppid
    CHECK_EQ 1, 0
    SYSCALL SYS_gettid
    CHECK_EQ 2, 1
    mov x0, #1
    adrp x1, ts0
    add x1, x1, :lo12:ts0
    SYSCALL SYS_clock_gettime
    CHECK_EQ 3, 0
    adrp x0, req_1ms
    add x0, x0, :lo12:req_1ms
    mov x1, #0
    SYSCALL SYS_nanosleep
    CHECK_EQ 4, 0
    mov x0, #1
    adrp x1, ts1
    add x1, x1, :lo12:ts1
    SYSCALL SYS_clock_gettime
    adrp x9, ts0
    add x9, x9, :lo12:ts0
    ldp x10, x11, [x9]
    ldp x12, x13, [x9, #16]          // ts1 follows ts0
    sub x12, x12, x10
    ldr x14, =1000000000
    mul x12, x12, x14
    add x13, x13, x12
    sub x0, x13, x11
    CHECK_GE 5, 1000000
    mov x0, #1
    mov x1, #0
    adrp x2, req_1us
    add x2, x2, :lo12:req_1us
    mov x3, #0
    SYSCALL SYS_clock_nanosleep
    CHECK_EQ 6, 0
    SYSCALL SYS_sched_yield
    CHECK_EQ 7, 0
    mov x0, #0
    SYSCALL SYS_brk
    mov x19, x0
    add x0, x19, #8192
    mov x20, x0
    SYSCALL SYS_brk
    sub x0, x0, x20
    CHECK_EQ 8, 0
    mov w9, #0x5a
    strb w9, [x19, #100]
    mov x0, #0
    mov x1, #8192
    mov x2, #3
    mov x3, #0x22
    mov x4, #-1
    mov x5, #0
    SYSCALL SYS_mmap
    mov x21, x0
    CHECK_GE 9, 4096
    mov x9, #0x77
    str x9, [x21]
    mov x0, x21
    mov x1, #8192
    SYSCALL SYS_munmap
    CHECK_EQ 10, 0
    adrp x0, uts
    add x0, x0, :lo12:uts
    SYSCALL SYS_uname
    CHECK_EQ 11, 0
    adrp x9, uts
    ldr w0, [x9, :lo12:uts]
    ldr w10, =0x756e694c            // "Linu"
    sub w0, w0, w10
    CHECK_EQ 12, 0
    mov x0, #0x7777
    SYSCALL SYS_prctl
    CHECK_EQ 13, -22
    mov x0, #AT_FDCWD
    adrp x1, path_discard
    add x1, x1, :lo12:path_discard
    mov x2, #2
    SYSCALL SYS_openat
    CHECK_EQ 14, -2                  // no RISC-V knob on arm64: -ENOENT
    mov x0, #99
    adrp x1, rbuf
    add x1, x1, :lo12:rbuf
    mov x2, #1
    SYSCALL SYS_read
    CHECK_EQ 15, -9
    mov x0, #1
    mov x1, #16
    mov x2, #5
    SYSCALL SYS_write
    CHECK_EQ 16, -14
    SYSCALL 999
    CHECK_EQ 17, -38
    adrp x9, failmask
    str x27, [x9, :lo12:failmask]
    mov x0, #1
    adrp x1, done
    add x1, x1, :lo12:done
    mov x2, #14
    SYSCALL SYS_write
    fmov d0, x27
    cnt v0.8b, v0.8b
    addv b0, v0.8b
    fmov w0, s0
    SYSCALL SYS_exit_group
.section .rodata
.align 3
req_1ms: .quad 0, 1000000
req_1us: .quad 0, 1000
path_discard: .asciz "/proc/sys/abi/riscv_v_vstate_discard"
done: .ascii "syscalls done\n"
.data
.align 4
.globl failmask
failmask: .quad -1
ts0: .quad 0, 0
ts1: .quad 0, 0
rbuf: .space 16
uts: .space 390
