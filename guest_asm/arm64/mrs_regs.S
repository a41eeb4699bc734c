// mrs_regs: reads every register of the EL0-emulated ID space (Op0=3, Op1=0, CRn=0,
// CRm=0 {MIDR, MPIDR, REVIDR} and CRm=2..7 op2=0..7, 51 reads, generic S3_0_C0_Cm_n names) into
// a buffer and writes it to stdout (8 bytes each, in that order).  Then an XZR-target read:
// x1..x7 hold known patterns across `mrs xzr, ...`; they and the reads into x5/x17/x30 follow
// (10 more words).  Exit 0.  tests/kernel/arm64/test_mrs_abi.py holds the same list.
.include "syscalls.inc"
.globl _start
_start:
    adrp x19, buf
    add x19, x19, :lo12:buf
    mrs x0, S3_0_C0_C0_0            // MIDR_EL1
    str x0, [x19, #0]
    mrs x0, S3_0_C0_C0_5            // MPIDR_EL1
    str x0, [x19, #8]
    mrs x0, S3_0_C0_C0_6            // REVIDR_EL1
    str x0, [x19, #16]
    mrs x0, S3_0_C0_C2_0            // ID_ISAR0_EL1
    str x0, [x19, #24]
    mrs x0, S3_0_C0_C2_1            // ID_ISAR1_EL1
    str x0, [x19, #32]
    mrs x0, S3_0_C0_C2_2            // ID_ISAR2_EL1
    str x0, [x19, #40]
    mrs x0, S3_0_C0_C2_3            // ID_ISAR3_EL1
    str x0, [x19, #48]
    mrs x0, S3_0_C0_C2_4            // ID_ISAR4_EL1
    str x0, [x19, #56]
    mrs x0, S3_0_C0_C2_5            // ID_ISAR5_EL1
    str x0, [x19, #64]
    mrs x0, S3_0_C0_C2_6            // ID_MMFR4_EL1
    str x0, [x19, #72]
    mrs x0, S3_0_C0_C2_7            // ID_ISAR6_EL1
    str x0, [x19, #80]
    mrs x0, S3_0_C0_C3_0            // MVFR0_EL1
    str x0, [x19, #88]
    mrs x0, S3_0_C0_C3_1            // MVFR1_EL1
    str x0, [x19, #96]
    mrs x0, S3_0_C0_C3_2            // MVFR2_EL1
    str x0, [x19, #104]
    mrs x0, S3_0_C0_C3_3
    str x0, [x19, #112]
    mrs x0, S3_0_C0_C3_4            // ID_PFR2_EL1
    str x0, [x19, #120]
    mrs x0, S3_0_C0_C3_5            // ID_DFR1_EL1
    str x0, [x19, #128]
    mrs x0, S3_0_C0_C3_6            // ID_MMFR5_EL1
    str x0, [x19, #136]
    mrs x0, S3_0_C0_C3_7
    str x0, [x19, #144]
    mrs x0, S3_0_C0_C4_0            // ID_AA64PFR0_EL1
    str x0, [x19, #152]
    mrs x0, S3_0_C0_C4_1            // ID_AA64PFR1_EL1
    str x0, [x19, #160]
    mrs x0, S3_0_C0_C4_2            // ID_AA64PFR2_EL1
    str x0, [x19, #168]
    mrs x0, S3_0_C0_C4_3
    str x0, [x19, #176]
    mrs x0, S3_0_C0_C4_4            // ID_AA64ZFR0_EL1
    str x0, [x19, #184]
    mrs x0, S3_0_C0_C4_5            // ID_AA64SMFR0_EL1
    str x0, [x19, #192]
    mrs x0, S3_0_C0_C4_6
    str x0, [x19, #200]
    mrs x0, S3_0_C0_C4_7
    str x0, [x19, #208]
    mrs x0, S3_0_C0_C5_0            // ID_AA64DFR0_EL1
    str x0, [x19, #216]
    mrs x0, S3_0_C0_C5_1            // ID_AA64DFR1_EL1
    str x0, [x19, #224]
    mrs x0, S3_0_C0_C5_2
    str x0, [x19, #232]
    mrs x0, S3_0_C0_C5_3
    str x0, [x19, #240]
    mrs x0, S3_0_C0_C5_4            // ID_AA64AFR0_EL1
    str x0, [x19, #248]
    mrs x0, S3_0_C0_C5_5            // ID_AA64AFR1_EL1
    str x0, [x19, #256]
    mrs x0, S3_0_C0_C5_6
    str x0, [x19, #264]
    mrs x0, S3_0_C0_C5_7
    str x0, [x19, #272]
    mrs x0, S3_0_C0_C6_0            // ID_AA64ISAR0_EL1
    str x0, [x19, #280]
    mrs x0, S3_0_C0_C6_1            // ID_AA64ISAR1_EL1
    str x0, [x19, #288]
    mrs x0, S3_0_C0_C6_2            // ID_AA64ISAR2_EL1
    str x0, [x19, #296]
    mrs x0, S3_0_C0_C6_3
    str x0, [x19, #304]
    mrs x0, S3_0_C0_C6_4
    str x0, [x19, #312]
    mrs x0, S3_0_C0_C6_5
    str x0, [x19, #320]
    mrs x0, S3_0_C0_C6_6
    str x0, [x19, #328]
    mrs x0, S3_0_C0_C6_7
    str x0, [x19, #336]
    mrs x0, S3_0_C0_C7_0            // ID_AA64MMFR0_EL1
    str x0, [x19, #344]
    mrs x0, S3_0_C0_C7_1            // ID_AA64MMFR1_EL1
    str x0, [x19, #352]
    mrs x0, S3_0_C0_C7_2            // ID_AA64MMFR2_EL1
    str x0, [x19, #360]
    mrs x0, S3_0_C0_C7_3            // ID_AA64MMFR3_EL1
    str x0, [x19, #368]
    mrs x0, S3_0_C0_C7_4
    str x0, [x19, #376]
    mrs x0, S3_0_C0_C7_5
    str x0, [x19, #384]
    mrs x0, S3_0_C0_C7_6
    str x0, [x19, #392]
    mrs x0, S3_0_C0_C7_7
    str x0, [x19, #400]
    // XZR target: the value is discarded, nothing else changes, the PC moves on
    mov x1, #4369
    mov x2, #8738
    mov x3, #13107
    mov x4, #17476
    mov x5, #21845
    mov x6, #26214
    mov x7, #30583
    mrs xzr, ID_AA64ISAR0_EL1
    mrs xzr, MIDR_EL1
    add x9, x19, #408
    str x1, [x9, #0]
    str x2, [x9, #8]
    str x3, [x9, #16]
    str x4, [x9, #24]
    str x5, [x9, #32]
    str x6, [x9, #40]
    str x7, [x9, #48]
    mrs x5, ID_AA64PFR0_EL1
    mrs x17, ID_AA64MMFR0_EL1
    mrs x30, ID_AA64ISAR1_EL1
    str x5, [x9, #56]
    str x17, [x9, #64]
    str x30, [x9, #72]
    mov x0, #1
    mov x1, x19
    mov x2, #488
    mov x8, #SYS_write
    svc #0
    mov x0, #0
    mov x8, #SYS_exit_group
    svc #0
.bss
.align 4
buf: .space 488
