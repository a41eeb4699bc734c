// lat_ctx: two processes ping-pong one byte over two pipes, N round trips (argv[1], default 1000).
.include "syscalls.inc"
.include "a64_util.inc"
.globl _start
_start:
    mov x28, sp
    ATOI_ARG 1, 1000
    mov x19, x0
    adrp x20, p1
    add x20, x20, :lo12:p1          // x20 = &p1, p2 = x20+8, buf = x20+24
    mov x0, x20
    mov x1, #0
    SYSCALL SYS_pipe2
    cbnz x0, fail
    add x0, x20, #8
    mov x1, #0
    SYSCALL SYS_pipe2
    cbnz x0, fail
    mov x0, #SIGCHLD
    mov x1, #0
    mov x2, #0
    mov x3, #0
    mov x4, #0
    SYSCALL SYS_clone
    cmp x0, #0
    b.lt fail
    b.eq child
parent:
    mov x21, x19
1:  ldr w0, [x20, #4]
    add x1, x20, #24
    mov x2, #1
    SYSCALL SYS_write
    cmp x0, #1
    b.ne fail
    ldr w0, [x20, #8]
    add x1, x20, #24
    mov x2, #1
    SYSCALL SYS_read
    cmp x0, #1
    b.ne fail
    subs x21, x21, #1
    b.ne 1b
    mov x0, #-1
    add x1, x20, #16
    mov x2, #0
    mov x3, #0
    SYSCALL SYS_wait4
    cmp x0, #0
    b.lt fail
    ldr w0, [x20, #16]
    lsr w0, w0, #8
    SYSCALL SYS_exit_group
child:
    mov x21, x19
2:  ldr w0, [x20]
    add x1, x20, #24
    mov x2, #1
    SYSCALL SYS_read
    cmp x0, #1
    b.ne fail
    ldr w0, [x20, #12]
    add x1, x20, #24
    mov x2, #1
    SYSCALL SYS_write
    subs x21, x21, #1
    b.ne 2b
    mov x0, #0
    SYSCALL SYS_exit_group
fail:
    mov x0, #1
    SYSCALL SYS_exit_group
.bss
.align 4
p1: .space 8
p2: .space 8
status: .space 8
buf: .space 8
