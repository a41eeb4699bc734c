// sve_block: the seed-004 blocking scenario on one CPU, three processes.
//  A (the parent): ROUNDS times: a short SVE burst, write a byte to B, block reading B's answer.
//  B: ROUNDS times: block reading A's byte, WORK iterations of plain integer work, answer.
//  C: uses SVE once, then only blocks: SLEEPS nanosleeps of 5 ms.
// argv: ROUNDS (default 300) WORK (default 500) SLEEPS (default 200).  Exit 0 when all finish.
.include "syscalls.inc"
.globl _start
_start:
    ldr x19, [sp]
    mov x20, #300
    mov x21, #500
    mov x22, #200
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
    cmp x19, #4
    b.lo 1f
    ldr x0, [sp, #32]
    bl atoi
    mov x22, x0
1:  adr x0, pab
    mov x1, #0
    mov x8, #SYS_pipe2
    svc #0
    cbnz x0, fail
    adr x0, pba
    mov x1, #0
    mov x8, #SYS_pipe2
    svc #0
    cbnz x0, fail
    bl fork
    cbz x0, proc_b
    bl fork
    cbz x0, proc_c
proc_a:
    mov x19, x20
2:  index z0.s, #1, #1            // the SVE burst
    add z1.s, z0.s, z0.s
    mov z2.d, z1.d
    mul z2.s, z2.s, #3
    ptrue p0.s
    uaddv d3, p0, z2.s
    ldr w0, pab + 4
    adr x1, buf
    mov x2, #1
    mov x8, #SYS_write
    svc #0
    ldr w0, pba
    adr x1, buf
    mov x2, #1
    mov x8, #SYS_read
    svc #0
    cmp x0, #1
    b.ne fail
    subs x19, x19, #1
    b.ne 2b
    bl wait
    bl wait
    mov x0, #0
    mov x8, #SYS_exit_group
    svc #0
proc_b:
    mov x19, x20
3:  ldr w0, pab
    adr x1, buf
    mov x2, #1
    mov x8, #SYS_read
    svc #0
    cmp x0, #1
    b.ne fail
    mov x9, x21
4:  subs x9, x9, #1
    b.ne 4b
    ldr w0, pba + 4
    adr x1, buf
    mov x2, #1
    mov x8, #SYS_write
    svc #0
    subs x19, x19, #1
    b.ne 3b
    mov x0, #0
    mov x8, #SYS_exit_group
    svc #0
proc_c:
    rdvl x0, #1                   // SVE used once
    mov x19, x22
5:  adr x0, ts
    mov x1, #0
    mov x8, #SYS_nanosleep
    svc #0
    subs x19, x19, #1
    b.ne 5b
    mov x0, #0
    mov x8, #SYS_exit_group
    svc #0
fork:
    mov x0, #SIGCHLD
    mov x1, #0
    mov x2, #0
    mov x3, #0
    mov x4, #0
    mov x8, #SYS_clone
    svc #0
    tbnz x0, #63, fail
    ret
wait:
    mov x0, #-1
    mov x1, #0
    mov x2, #0
    mov x3, #0
    mov x8, #SYS_wait4
    svc #0
    ret
fail:
    mov x0, #1
    mov x8, #SYS_exit_group
    svc #0
atoi:
    mov x1, #0
    mov x3, #10
6:  ldrb w2, [x0], #1
    sub w2, w2, #'0'
    cmp w2, #9
    b.hi 7f
    madd x1, x1, x3, x2
    b 6b
7:  mov x0, x1
    ret
.data
.balign 8
pab: .space 8
pba: .space 8
buf: .space 8
ts:  .quad 0, 5000000
