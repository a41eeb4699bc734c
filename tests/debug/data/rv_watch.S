# arch: riscv64
# Data accesses for the watchpoint tests: store 5 to `var`, read it back, exit with it.
.globl _start
_start:
    la t0, var
    li t1, 5
.globl do_store
do_store:
    sd t1, 0(t0)
    addi t2, t1, 1
.globl do_load
do_load:
    ld a0, 0(t0)
    li a7, 93
    ecall
.data
.globl var
var: .quad 0
