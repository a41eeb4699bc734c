// spin2: fork, then parent and child both spin N iterations (argv[1], default 2,000,000);
// the parent waits for the child and exits with the child's status.
.include "syscalls.inc"
.include "a64_util.inc"
.globl _start
_start:
    mov x28, sp
    ATOI_ARG 1, 2000000
    mov x19, x0
    mov x0, #SIGCHLD
    mov x1, #0
    mov x2, #0
    mov x3, #0
    mov x4, #0
    SYSCALL SYS_clone
    mov x20, x0
    mov x9, x19
1:  subs x9, x9, #1
    b.ne 1b
    cbz x20, child
    mov x0, #-1
    adrp x1, status
    add x1, x1, :lo12:status
    mov x2, #0
    mov x3, #0
    SYSCALL SYS_wait4
    adrp x1, status
    ldr w0, [x1, :lo12:status]
    lsr w0, w0, #8
    SYSCALL SYS_exit_group
child:
    mov x0, #7
    SYSCALL SYS_exit_group
.bss
.align 3
status: .space 8
