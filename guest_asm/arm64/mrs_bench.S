// mrs_bench: seed 001's benchmark.  main starts N threads (argv[1], default 4) with
// clone(CLONE_VM|CLONE_THREAD|...|CLONE_CHILD_CLEARTID), pins thread i to CPU i % ncpus (argv[3],
// default N) with sched_setaffinity; each thread reads ID_AA64ISAR0_EL1 K times (argv[2], default
// 1000) — every read traps (no FEAT_IDST: UNDEFINED -> do_el0_undef; FEAT_IDST: EC 0x18 ->
// do_el0_sys) and is emulated by the kernel.  Start barrier: each pinned thread counts itself
// ready (ldadd) and FUTEX_WAITs on `go`; main sched_yields until all are ready, reads CNTVCT_EL0,
// sets go and FUTEX_WAKEs them, joins each thread by FUTEX_WAIT on its clear_child_tid word and
// reads CNTVCT_EL0 again.  It writes (t_end - t_go, CNTFRQ_EL0) as two 8-byte words — the
// concurrent phase alone, without the N clones — and exits 0 iff every thread saw the same
// non-zero value, else 1.
.arch_extension lse
.include "syscalls.inc"
.include "a64_util.inc"
.equ MAXT, 64
.equ STACK, 4096
.equ FLAGS, CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM|CLONE_PARENT_SETTID|CLONE_CHILD_CLEARTID
.globl _start
_start:
    mov x28, sp
    ATOI_ARG 1, 4
    mov x19, x0                     // N
    ATOI_ARG 2, 1000
    mov x20, x0                     // K
    ATOI_ARG 3, 0
    cmp x0, #0
    csel x21, x19, x0, eq           // ncpus (default N)
    cmp x19, #MAXT
    b.gt fail
    adrp x22, tids
    add x22, x22, :lo12:tids
    adrp x23, values
    add x23, x23, :lo12:values
    adrp x24, stacks
    add x24, x24, :lo12:stacks
    mov x25, #0                     // i
spawn:
    cmp x25, x19
    b.ge join
    add x9, x25, #1
    mov x10, #STACK
    madd x1, x9, x10, x24           // top of stack i
    ldr x0, =FLAGS
    add x2, x22, x25, lsl #2        // &tids[i]: parent tid and clear_child_tid
    mov x3, #0
    mov x4, x2
    SYSCALL SYS_clone
    cmp x0, #0
    b.lt fail
    b.eq thread
    add x25, x25, #1
    b spawn
join:
    adrp x27, ready
    add x27, x27, :lo12:ready
0:  ldr w9, [x27]                   // wait until every thread is pinned and waiting
    cmp w9, w19
    b.ge 10f
    SYSCALL SYS_sched_yield
    b 0b
10: mrs x26, CNTVCT_EL0
    adrp x0, go
    add x0, x0, :lo12:go
    mov w9, #1
    str w9, [x0]
    mov x1, #1                      // FUTEX_WAKE
    mov x2, #0x7fffffff
    SYSCALL SYS_futex
    adrp x9, t_go
    str x26, [x9, :lo12:t_go]
    mov x25, #0
1:  cmp x25, x19
    b.ge check
    add x26, x22, x25, lsl #2
2:  ldr w2, [x26]
    cbz w2, 3f
    mov x0, x26
    mov x1, #0                      // FUTEX_WAIT
    mov x3, #0
    SYSCALL SYS_futex
    b 2b
3:  add x25, x25, #1
    b 1b
check:
    mrs x9, CNTVCT_EL0
    adrp x10, t_go
    ldr x10, [x10, :lo12:t_go]
    sub x9, x9, x10
    mrs x10, CNTFRQ_EL0
    adrp x1, timing
    add x1, x1, :lo12:timing
    stp x9, x10, [x1]
    mov x0, #1
    mov x2, #16
    SYSCALL SYS_write
    ldr x10, [x23]                  // every thread read the same non-zero value
    cset x0, eq                     // (x0 = 1 if the comparison below never runs and x10 == 0)
    cbz x10, 6f
    mov x9, #1
4:  cmp x9, x19
    b.ge 5f
    ldr x11, [x23, x9, lsl #3]
    cmp x11, x10
    b.ne 6f
    add x9, x9, #1
    b 4b
5:  mov x0, #0
    SYSCALL SYS_exit_group
6:  mov x0, #1
    SYSCALL SYS_exit_group
thread:                             // x25 = my index (registers are copied by clone)
    udiv x9, x25, x21
    msub x9, x9, x21, x25           // i % ncpus
    mov x10, #1
    lsl x10, x10, x9
    adrp x2, masks
    add x2, x2, :lo12:masks
    add x2, x2, x25, lsl #3
    str x10, [x2]
    mov x0, #0
    mov x1, #8
    SYSCALL SYS_sched_setaffinity
    cbnz x0, fail
    adrp x0, ready
    add x0, x0, :lo12:ready
    mov w1, #1
    ldaddal w1, w2, [x0]            // ready++
    adrp x0, go
    add x0, x0, :lo12:go
11: ldr w2, [x0]
    cbnz w2, 12f
    mov x1, #0                      // FUTEX_WAIT while go == 0
    mov x3, #0
    SYSCALL SYS_futex
    adrp x0, go
    add x0, x0, :lo12:go
    b 11b
12: mov x9, x20
    cbz x9, 8f
7:  mrs x0, ID_AA64ISAR0_EL1        // the measured loop: one trap per iteration
    subs x9, x9, #1
    b.ne 7b
    str x0, [x23, x25, lsl #3]
8:  mov x0, #0
    SYSCALL SYS_exit
fail:
    mov x0, #2
    SYSCALL SYS_exit_group
.bss
.align 4
ready: .space 4
go: .space 4
t_go: .space 8
timing: .space 16
tids: .space 4*MAXT
.align 3
values: .space 8*MAXT
masks: .space 8*MAXT
.align 4
stacks: .space STACK*(MAXT+1)
