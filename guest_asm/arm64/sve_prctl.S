// sve_prctl: PR_SVE_SET_VL / PR_SVE_GET_VL.  Writes 16 little-endian 64-bit results to stdout:
//  0 rdvl (default)         1 SET_VL(16)            2 rdvl               3 GET_VL
//  4 SET_VL(17) -EINVAL     5 SET_VL(48) rounds     6 rdvl               7 SET_VL(4096) clamps
//  8 SET_VL(0) -EINVAL      9 SET_VL(16|bad flag)   10 SET_VL(16|ONEXEC) 11 rdvl (unchanged)
// 12 GET_VL                 13 SET_VL(32|INHERIT)   14 GET_VL            15 v5 low 64 bits kept
.include "syscalls.inc"
.equ PR_SVE_SET_VL, 50
.equ PR_SVE_GET_VL, 51
.equ INHERIT, (1 << 17)
.equ ONEXEC, (1 << 18)
.macro PRCTL opt, arg, slot
    mov x0, #\opt
    ldr x1, =\arg
    mov x2, #0
    mov x3, #0
    mov x4, #0
    mov x8, #SYS_prctl
    svc #0
    str x0, [x20, #(8 * \slot)]
.endm
.macro RDVL slot
    rdvl x9, #1
    str x9, [x20, #(8 * \slot)]
.endm
.globl _start
_start:
    adr x20, out
    ldr x9, =0x1122334455667788
    fmov d5, x9
    RDVL 0
    PRCTL PR_SVE_SET_VL, 16, 1
    RDVL 2
    PRCTL PR_SVE_GET_VL, 0, 3
    PRCTL PR_SVE_SET_VL, 17, 4
    PRCTL PR_SVE_SET_VL, 48, 5
    RDVL 6
    PRCTL PR_SVE_SET_VL, 4096, 7
    PRCTL PR_SVE_SET_VL, 0, 8
    PRCTL PR_SVE_SET_VL, (16 | (1 << 20)), 9
    PRCTL PR_SVE_SET_VL, (16 | ONEXEC), 10
    RDVL 11
    PRCTL PR_SVE_GET_VL, 0, 12
    PRCTL PR_SVE_SET_VL, (32 | INHERIT), 13
    PRCTL PR_SVE_GET_VL, 0, 14
    fmov x9, d5
    str x9, [x20, #(8 * 15)]
    mov x0, #1
    mov x1, x20
    mov x2, #128
    mov x8, #SYS_write
    svc #0
    mov x0, #0
    mov x8, #SYS_exit_group
    svc #0
.ltorg
.data
.balign 8
out: .space 128
