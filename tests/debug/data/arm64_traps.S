// arch: arm64
// arm64_traps: a syscall, an EL0 MRS of an ID register (do_el0_undef), an SVE access (do_sve_acc)
.include "syscalls.inc"
.globl _start
_start:
    mov x0, #1
    adr x1, msg
    mov x2, #6
    mov x8, #SYS_write
    svc #0
read_id:
    mrs x0, ID_AA64ISAR0_EL1
sve_start:
    rdvl x0, #1
    mov x0, #0
done:
    mov x8, #SYS_exit_group
    svc #0
msg:
    .ascii "hello\n"
