# vabi_sysctl: /proc/sys/abi/riscv_v_vstate_discard from inside the guest, and when a change of
# the knob takes effect.  stdout = 16 result words (8 bytes each, signed) then 5 snapshots.
#   res[0]  openat(O_RDONLY)                 res[1]  read(16)      res[2]  the bytes read
#   res[3]  read again (EOF)                 res[4]  openat(O_WRONLY)
#   res[5]  write "x\n" (-EINVAL)            res[6]  write "1abc" (-EINVAL)
#   res[7]  openat of abi/riscv_v_nope (-ENOENT)
#   S0 = P;  S1 = P then write "1\n" (the knob flips to 1 inside this syscall);  res[9] its return
#   S2 = P then getppid;  S3 = P then write "0" (flips to 0);  res[10] its return
#   S4 = P then getppid;  res[11] write "2" (proc_dobool stores 1)
#   res[12] read after reopening, res[13] its bytes;  res[14] openat(O_RDWR);  res[15] write of 0 bytes
.include "syscalls.inc"
.include "rv_util.inc"
.include "vabi_macros.inc"
.equ O_RDONLY, 0
.equ O_WRONLY, 1
.equ O_RDWR, 2
.equ SYS_lseek, 62
.macro OPEN path, flags
    li a0, AT_FDCWD
    la a1, \path
    li a2, \flags
    li a3, 0
    SYSCALL SYS_openat
.endm
.macro WRITE_STR fdreg, str, len
    mv a0, \fdreg
    la a1, \str
    li a2, \len
    SYSCALL SYS_write
.endm
# Linux's default sysctl_writes_strict ignores a write at a non-zero file position, so each
# further write on the same descriptor first seeks back to 0 (as sysctl(8)-like tools reopen).
.macro REWIND fdreg
    mv a0, \fdreg
    li a1, 0
    li a2, 0
    SYSCALL SYS_lseek
.endm
.globl _start
_start:
    la s0, res
    la s1, snaps
    li s2, 0x10                 # pattern seed
    OPEN knob, O_RDONLY
    sd a0, 0(s0)
    mv s3, a0
    mv a0, s3
    la a1, rbuf
    li a2, 16
    SYSCALL SYS_read
    sd a0, 8(s0)
    ld t0, rbuf
    sd t0, 16(s0)
    mv a0, s3
    la a1, rbuf2
    li a2, 16
    SYSCALL SYS_read
    sd a0, 24(s0)
    mv a0, s3
    SYSCALL SYS_close
    OPEN knob, O_WRONLY
    sd a0, 32(s0)
    mv s3, a0
    WRITE_STR s3, s_x, 2
    sd a0, 40(s0)
    WRITE_STR s3, s_1abc, 4
    sd a0, 48(s0)
    OPEN nope, O_RDONLY
    sd a0, 56(s0)

    PATTERN s2
    SNAP s1                     # S0
    PATTERN s2
    WRITE_STR s3, s_1nl, 2
    mv s4, a0
    SNAP s1                     # S1
    sd s4, 72(s0)
    PATTERN s2
    SYSCALL SYS_getppid
    SNAP s1                     # S2
    REWIND s3
    PATTERN s2
    WRITE_STR s3, s_0, 1
    mv s4, a0
    SNAP s1                     # S3
    sd s4, 80(s0)
    PATTERN s2
    SYSCALL SYS_getppid
    SNAP s1                     # S4
    REWIND s3
    WRITE_STR s3, s_2, 1
    sd a0, 88(s0)
    mv a0, s3
    SYSCALL SYS_close
    OPEN knob, O_RDONLY
    mv s3, a0
    mv a0, s3
    la a1, rbuf3
    li a2, 16
    SYSCALL SYS_read
    sd a0, 96(s0)
    ld t0, rbuf3
    sd t0, 104(s0)
    OPEN knob, O_RDWR
    sd a0, 112(s0)
    mv s3, a0
    WRITE_STR s3, s_0, 0
    sd a0, 120(s0)

    li a0, 1
    la a1, res
    sub a2, s1, a1              # res and snaps are contiguous
    SYSCALL SYS_write
    li a0, 0
    SYSCALL SYS_exit_group

.data
knob: .asciz "/proc/sys/abi/riscv_v_vstate_discard"
nope: .asciz "/proc/sys/abi/riscv_v_nope"
s_x: .ascii "x\n"
s_1abc: .ascii "1abc"
s_1nl: .ascii "1\n"
s_0: .ascii "0"
s_2: .ascii "2"
.align 3
rbuf: .space 16
rbuf2: .space 16
rbuf3: .space 16
.bss
.align 6
res: .space 128
snaps: .space 5 * (32 + 32 * 512)
