# arch: riscv64
# rdcounter: reads one user counter CSR, chosen by argv[1]: 0 = time, 1 = cycle, 2 = instret.
# Writes "go\n" first; exit status 0 if the read worked.  Linux 6.6+ lets user mode read `time`
# but not `cycle`/`instret` unless kernel.perf_user_access=2 (then SIGILL: status 132).
.globl _start
_start:
    ld t0, 0(sp)                # argc
    li t1, 2
    li s1, 0
    blt t0, t1, 1f
    ld t2, 16(sp)               # argv[1]
    lbu s1, 0(t2)
    addi s1, s1, -48
1:  li a0, 1
    la a1, msg
    li a2, 3
    li a7, 64
    ecall
    beqz s1, rd_time
    li t1, 1
    beq s1, t1, rd_cycle
    rdinstret t3
    j done
rd_time:
    rdtime t3
    j done
rd_cycle:
    rdcycle t3
done:
    li a0, 0
    li a7, 93
    ecall
.data
msg: .ascii "go\n"
