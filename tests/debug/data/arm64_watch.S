// arch: arm64
// Data accesses for the watchpoint tests: store 5 to `var` (post-index writeback), read it back.
.globl _start
_start:
    adrp x9, var
    add x9, x9, :lo12:var
    mov x10, x9
    mov x1, #5
.globl do_store
do_store:
    str x1, [x9], #8
    add x2, x1, #1
.globl do_load
do_load:
    ldr x0, [x10]
    mov x8, #93
    svc #0
.data
.globl var
var: .quad 0
    .quad 0
