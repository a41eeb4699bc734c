// mrs_loop: K iterations (argv[1], default 1000) of a loop mixing emulated MRS reads with
// ordinary instructions: sum += ID_AA64ISAR0_EL1 + MIDR_EL1 + ID_AA64PFR0_EL1 (an XZR read in
// between).  Writes sum and the iteration count (8 bytes each) and exits 0.  A wrong PC step
// or a wrong Rt would change either word or the control flow.
.include "syscalls.inc"
.include "a64_util.inc"
.globl _start
_start:
    mov x28, sp
    ATOI_ARG 1, 1000
    mov x20, x0                     // K
    mov x21, #0                     // sum
    mov x22, #0                     // count
    cbz x20, 2f
1:  mrs x1, ID_AA64ISAR0_EL1
    add x21, x21, x1
    mrs x2, MIDR_EL1
    mrs xzr, ID_AA64MMFR0_EL1
    add x21, x21, x2
    mrs x3, ID_AA64PFR0_EL1
    add x22, x22, #1
    add x21, x21, x3
    cmp x22, x20
    b.ne 1b
2:  adrp x9, out
    add x9, x9, :lo12:out
    stp x21, x22, [x9]
    mov x0, #1
    mov x1, x9
    mov x2, #16
    SYSCALL SYS_write
    mov x0, #0
    SYSCALL SYS_exit_group
.bss
.align 4
out: .space 16
