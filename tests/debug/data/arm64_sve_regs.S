// arch: arm64
// Known SVE state for the gdbserver tests: z0 = {1, 2, 3, ...} (.s), z1 = 0x5a bytes,
// p0 = ptrue .s, p1 = ptrue .b, FFR all set, then exit(0).  `sve_set` is right after the setup.
.globl _start
_start:
    index z0.s, #1, #1
    mov z1.b, #0x5a
    ptrue p0.s
    ptrue p1.b
    setffr
.globl sve_set
sve_set:
    nop
    mov x0, #0
    mov x8, #93
    svc #0
