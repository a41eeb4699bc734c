# vabi_ctrl: PR_RISCV_V_SET_CONTROL / PR_RISCV_V_GET_CONTROL, their fork and exec semantics, and
# SIGILL for a task not allowed to use V.  argv[1] = mode, argv[2] = this program's ELF path
# (for execve).  Each mode writes its result words (8 bytes, signed) to stdout.
#   1  GET; SET 0x20 / 3 / next=3 (-EINVAL); SET OFF while ON (-EPERM); SET next=OFF; GET;
#      fork: the child exits with its GET; vsetvli still works here (vl); then execve mode 2
#   2  GET, then a vector instruction (SIGILL when the control says OFF)
#   3  SET cur=ON, next=OFF, inherit; GET; execve mode 4
#   4  GET; SET ON; GET; vsetvli (vl); exit 0
#   5  (run with abi.riscv_v_default_allow=0) GET; fork: the child uses V (SIGILL), parent gets
#      its wait status; SET OFF while OFF (0); SET ON; vsetvli (vl); exit 0
.include "syscalls.inc"
.include "rv_util.inc"
.equ SYS_execve, 221
.equ PR_SET, 69
.equ PR_GET, 70
.macro PRCTL opt, arg
    li a0, \opt
    li a1, \arg
    SYSCALL SYS_prctl
.endm
.macro PUT
    sd a0, 0(s0)
    addi s0, s0, 8
.endm
.macro FORK
    li a0, SIGCHLD
    li a1, 0
    li a2, 0
    li a3, 0
    li a4, 0
    SYSCALL SYS_clone
.endm
.macro WAIT
    li a0, -1
    la a1, status
    li a2, 0
    li a3, 0
    SYSCALL SYS_wait4
    lw a0, status
.endm
.globl _start
_start:
    mv s11, sp
    la s0, res
    ld s10, 24(s11)             # argv[2]: our ELF
    ATOI_ARG 1, 1
    li t0, 1
    beq a0, t0, mode1
    li t0, 2
    beq a0, t0, mode2
    li t0, 3
    beq a0, t0, mode3
    li t0, 4
    beq a0, t0, mode4
    li t0, 5
    beq a0, t0, mode5
    j fail

mode1:
    PRCTL PR_GET, 0
    PUT
    PRCTL PR_SET, 0x20
    PUT
    PRCTL PR_SET, 3
    PUT
    PRCTL PR_SET, 0xC
    PUT
    PRCTL PR_SET, 1
    PUT
    PRCTL PR_SET, 0x4           # cur DEFAULT (keep), next OFF
    PUT
    PRCTL PR_GET, 0
    PUT
    FORK
    bltz a0, fail
    bnez a0, 1f
    PRCTL PR_GET, 0             # child: the control is copied at fork
    SYSCALL SYS_exit_group
1:  WAIT
    srli a0, a0, 8
    PUT
    vsetvli a0, zero, e8, m1, ta, ma
    PUT
    call flush
    la a1, str2
    j exec

mode2:
    PRCTL PR_GET, 0
    PUT
    call flush
    vsetvli a0, zero, e8, m1, ta, ma
    li a0, 0
    SYSCALL SYS_exit_group

mode3:
    PRCTL PR_SET, 0x16          # cur ON, next OFF, inherit
    PUT
    PRCTL PR_GET, 0
    PUT
    call flush
    la a1, str4
    j exec

mode4:
    PRCTL PR_GET, 0
    PUT
    PRCTL PR_SET, 2
    PUT
    PRCTL PR_GET, 0
    PUT
    vsetvli a0, zero, e8, m1, ta, ma
    PUT
    call flush
    li a0, 0
    SYSCALL SYS_exit_group

mode5:
    PRCTL PR_GET, 0
    PUT
    FORK
    bltz a0, fail
    bnez a0, 1f
    vsetvli a0, zero, e8, m1, ta, ma    # child: not allowed -> SIGILL
    li a0, 0
    SYSCALL SYS_exit_group
1:  WAIT
    PUT
    PRCTL PR_SET, 1
    PUT
    PRCTL PR_SET, 2
    PUT
    vsetvli a0, zero, e8, m1, ta, ma
    PUT
    call flush
    li a0, 0
    SYSCALL SYS_exit_group

# exec(argv[2], [argv[2], a1, argv[2]]); a1 = mode string
exec:
    la t0, xargv
    sd s10, 0(t0)
    sd a1, 8(t0)
    sd s10, 16(t0)
    sd zero, 24(t0)
    mv a0, s10
    la a1, xargv
    li a2, 0
    SYSCALL SYS_execve
    li a0, 3
    SYSCALL SYS_exit_group

# write res[..s0) to stdout and reset s0
flush:
    li a0, 1
    la a1, res
    sub a2, s0, a1
    SYSCALL SYS_write
    la s0, res
    ret

fail:
    li a0, 1
    SYSCALL SYS_exit_group

.data
str2: .asciz "2"
str4: .asciz "4"
.align 3
status: .space 8
xargv: .space 32
res: .space 256
