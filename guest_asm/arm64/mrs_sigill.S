// mrs_sigill: writes "go\n", then executes the faulting instruction selected by argv[1]
// (one digit): 0 `mrs x0, S3_0_C0_C1_0` (ID_PFR0_EL1: CRm=1, outside the emulated space),
// 1 `mrs x0, SCTLR_EL1` (an EL1 register), 2 `.inst 0x00000000` (UDF, not an MRS),
// 3 `msr S3_0_C0_C6_0, x0` (a write to the ID space), 4 `mrs x0, S3_0_C0_C0_1` (CRm=0 but not
// MIDR/MPIDR/REVIDR).  Each sits at the global label faultN; the kernel must deliver SIGILL
// (status 132) with the PC there.  Falling through exits 0.
.include "syscalls.inc"
.globl _start
.globl fault0, fault1, fault2, fault3, fault4
_start:
    mov x28, sp
    ldr x9, [x28]                   // argc
    mov x19, #0
    cmp x9, #2
    b.lt 1f
    ldr x10, [x28, #16]             // argv[1]
    ldrb w19, [x10]
    sub x19, x19, #48
1:  mov x0, #1
    adr x1, msg
    mov x2, #3
    mov x8, #SYS_write
    svc #0
    cmp x19, #1
    b.eq fault1
    cmp x19, #2
    b.eq fault2
    cmp x19, #3
    b.eq fault3
    cmp x19, #4
    b.eq fault4
fault0: mrs x0, S3_0_C0_C1_0
    b done
fault1: mrs x0, SCTLR_EL1
    b done
fault2: .inst 0x00000000
    b done
fault3: msr S3_0_C0_C6_0, x0
    b done
fault4: mrs x0, S3_0_C0_C0_1
done:
    mov x0, #0
    mov x8, #SYS_exit_group
    svc #0
msg: .ascii "go\n"
