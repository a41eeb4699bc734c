// fp_pidbench: like tools/testing/selftests/arm64/fp/fp-pidbench.S — getpid loops timed with
// CNTVCT_EL0 — never used SVE, used once, used before every syscall, no SVE after SVE.
// Each phase is split into BLOCKS blocks of ITERS getpid calls so the cost can be followed across
// the 1 s sve_timeout.  argv: ITERS (default 1000) BLOCKS (default 4).
// stdout (binary, little-endian u64): ITERS, BLOCKS, VL in bits, CNTFRQ, then 4 x BLOCKS deltas.
.include "syscalls.inc"
.macro TEST_LOOP per_loop
    mov x22, #0
3:  mov x10, x20
    mov x8, #SYS_getpid
    mrs x11, cntvct_el0
4:  \per_loop
    svc #0
    sub x10, x10, #1
    cbnz x10, 4b
    mrs x12, cntvct_el0
    sub x0, x12, x11
    str x0, [x24], #8
    add x22, x22, #1
    cmp x22, x21
    b.lo 3b
.endm
.globl _start
_start:
    ldr x19, [sp]                 // argc
    mov x20, #1000
    mov x21, #4
    cmp x19, #2
    b.lo 1f
    ldr x0, [sp, #16]
    bl atoi
    mov x20, x0
    cmp x19, #3
    b.lo 1f
    ldr x0, [sp, #24]
    bl atoi
    mov x21, x0
1:  adr x23, out
    stp x20, x21, [x23]
    mrs x0, cntfrq_el0
    str x0, [x23, #24]
    add x24, x23, #32
    // Test having never used SVE
    TEST_LOOP
    // Execute a SVE instruction (the first one traps)
    rdvl x0, #8
    str x0, [x23, #16]
    TEST_LOOP                     // SVE used once
    TEST_LOOP "rdvl x0, #8"       // SVE used per syscall
    TEST_LOOP                     // No SVE after SVE
    mov x0, #1
    mov x1, x23
    sub x2, x24, x23
    mov x8, #SYS_write
    svc #0
    mov x0, #0
    mov x8, #SYS_exit_group
    svc #0

atoi:
    mov x1, #0
    mov x3, #10
5:  ldrb w2, [x0], #1
    sub w2, w2, #'0'
    cmp w2, #9
    b.hi 6f
    madd x1, x1, x3, x2
    b 5b
6:  mov x0, x1
    ret
.data
.balign 8
out: .space 32 + 8 * 4 * 4096
