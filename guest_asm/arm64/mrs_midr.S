// mrs_midr: main starts N threads (argv[1], default 2); thread i pins itself to CPU i with
// sched_setaffinity, then reads MIDR_EL1 and MPIDR_EL1 and asks getcpu() where it runs.  main
// joins them (futex on clear_child_tid) and writes, per thread, MIDR, MPIDR, cpu (8 bytes each).
.include "syscalls.inc"
.include "a64_util.inc"
.equ MAXT, 64
.equ STACK, 4096
.equ SYS_getcpu, 168
.equ FLAGS, CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM|CLONE_PARENT_SETTID|CLONE_CHILD_CLEARTID
.globl _start
_start:
    mov x28, sp
    ATOI_ARG 1, 2
    mov x19, x0                     // N
    cmp x19, #MAXT
    b.gt fail
    adrp x22, tids
    add x22, x22, :lo12:tids
    adrp x23, out
    add x23, x23, :lo12:out
    adrp x24, stacks
    add x24, x24, :lo12:stacks
    mov x25, #0
spawn:
    cmp x25, x19
    b.ge join
    add x9, x25, #1
    mov x10, #STACK
    madd x1, x9, x10, x24
    ldr x0, =FLAGS
    add x2, x22, x25, lsl #2
    mov x3, #0
    mov x4, x2
    SYSCALL SYS_clone
    cmp x0, #0
    b.lt fail
    b.eq thread
    add x25, x25, #1
    b spawn
join:
    mov x25, #0
1:  cmp x25, x19
    b.ge 4f
    add x26, x22, x25, lsl #2
2:  ldr w2, [x26]
    cbz w2, 3f
    mov x0, x26
    mov x1, #0
    mov x3, #0
    SYSCALL SYS_futex
    b 2b
3:  add x25, x25, #1
    b 1b
4:  mov x0, #1
    mov x1, x23
    mov x9, #24
    mul x2, x19, x9
    SYSCALL SYS_write
    mov x0, #0
    SYSCALL SYS_exit_group
thread:                             // x25 = my index
    mov x10, #1
    lsl x10, x10, x25
    adrp x2, masks
    add x2, x2, :lo12:masks
    add x2, x2, x25, lsl #3
    str x10, [x2]
    mov x0, #0
    mov x1, #8
    SYSCALL SYS_sched_setaffinity
    cbnz x0, fail
    mov x9, #24
    madd x26, x25, x9, x23          // &out[i]
    mrs x11, MIDR_EL1
    mrs x12, MPIDR_EL1
    stp x11, x12, [x26]
    add x0, x26, #16
    mov x1, #0
    mov x2, #0
    SYSCALL SYS_getcpu
    mov x0, #0
    SYSCALL SYS_exit
fail:
    mov x0, #2
    SYSCALL SYS_exit_group
.bss
.align 4
tids: .space 4*MAXT
.align 3
out: .space 24*MAXT
masks: .space 8*MAXT
.align 4
stacks: .space STACK*(MAXT+1)
