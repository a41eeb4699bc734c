// arch: arm64
// policy_arm64: three EL0 MRS of an ID register (each an UNDEFINED trap without FEAT_IDST), then a
// first SVE instruction (an SVE access trap, do_sve_acc)
.include "syscalls.inc"
.globl _start
_start:
    mrs x0, ID_AA64ISAR0_EL1
    mrs x1, ID_AA64ISAR0_EL1
    mrs x2, ID_AA64ISAR0_EL1
    rdvl x3, #1
    mov x0, #0
    mov x8, #SYS_exit_group
    svc #0
