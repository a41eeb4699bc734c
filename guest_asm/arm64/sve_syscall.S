// sve_syscall: the SVE syscall ABI.  Fill Z/P/FFR (first SVE use traps), dump them, getpid, dump
// again; write both dumps (2 x 4096 bytes) to stdout.  After the syscall: V0-V31 kept, Z bits above
// 128, P0-P15 and FFR zero, VL unchanged (Documentation/arch/arm64/sve.rst, "System call behaviour").
.include "syscalls.inc"
.include "sve_util.inc"
.globl _start
_start:
    SVE_FILL 3
    adr x20, before
    SVE_DUMP x20
    mov x8, #SYS_getpid
    svc #0
    adr x20, after
    SVE_DUMP x20
    mov x0, #1
    adr x1, before
    mov x2, #8192
    mov x8, #SYS_write
    svc #0
    mov x0, #0
    mov x8, #SYS_exit_group
    svc #0
.data
.balign 64
before: .space 4096
after:  .space 4096
