// sve_preempt: two processes fill Z/P/FFR with different values, spin without syscalls while the
// timer preempts them (run with a high HZ and timeslice_ticks=1 on one CPU), dump again and
// compare in-guest: every bit of Z, P, FFR and the VL must survive.  Exit 0 if both match,
// 1 if the parent's state changed, 2 if the child's did.
.include "syscalls.inc"
.include "sve_util.inc"
.equ SPIN, 40000
.globl _start
_start:
    mov x0, #SIGCHLD
    mov x1, #0
    mov x2, #0
    mov x3, #0
    mov x4, #0
    mov x8, #SYS_clone
    svc #0
    cbz x0, child
parent:
    SVE_FILL 11
    bl check
    mov x21, x0
    mov x0, #-1
    adr x1, status
    mov x2, #0
    mov x3, #0
    mov x8, #SYS_wait4
    svc #0
    ldr w0, status
    lsr w0, w0, #8
    orr x0, x0, x21
    mov x8, #SYS_exit_group
    svc #0
child:
    SVE_FILL 77
    bl check
    lsl x0, x0, #1
    mov x8, #SYS_exit_group
    svc #0

// dump, spin, dump, compare: x0 = 0 if equal else 1
check:
    adr x20, before
    SVE_DUMP x20
    ldr x13, =SPIN
1:  subs x13, x13, #1
    b.ne 1b
    adr x21, after
    SVE_DUMP x21
    SVE_CMP x20, x21, 2f
    mov x0, #0
    ret
2:  mov x0, #1
    ret
.ltorg
.data
.balign 64
before: .space 4096
after:  .space 4096
status: .space 8
