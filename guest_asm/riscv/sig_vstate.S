# sig_vstate: the V state across a signal delivered on syscall return.
#   v1 = 5 (after a first use), kill(getpid(), SIGUSR1); the SA_SIGINFO handler walks the frame's
#   extension records (uc_mcontext.sc_extdesc.hdr, then RISCV_V_MAGIC ... END), records what the
#   V record holds, writes v1 = 9 and returns through the kernel's sigreturn trampoline (ra).
#   After rt_sigreturn v1 is stored again.  Results (res, 8-byte slots):
#   +0 first record magic, +8 its size, +16 vl in the V record, +24 vlenb in the V record,
#   +32 v1[0] after sigreturn, +40 v1[0] in the V record, +48 the handler's a0 (the signal),
#   +56 1 if a1 (siginfo) == a2 (ucontext) - 128, +64 the END header (magic | size << 32).
.globl _start
_start:
    li a7, 134                  # rt_sigaction(SIGUSR1, &act, NULL, 8)
    li a0, 10
    la a1, act
    li a2, 0
    li a3, 8
    ecall
    vsetvli t0, x0, e8, m1, ta, ma      # first use: traps, zeroed context
    vmv.v.i v1, 5
    li a7, 172                  # getpid
    ecall
    li a1, 10
    li a7, 129                  # kill(getpid(), SIGUSR1): delivered on this syscall's return
    ecall
    vsetvli t0, x0, e8, m1, ta, ma      # (vl may be 0 / vill after a discard)
    la t1, after
    vse8.v v1, (t1)
    la t2, res
    lbu t3, 0(t1)
    sd t3, 32(t2)
    li a0, 0
    li a7, 94
    ecall

handler:
    la t2, res
    sd a0, 48(t2)
    addi t3, a2, -128
    sub t3, t3, a1
    seqz t3, t3
    sd t3, 56(t2)
    addi t0, a2, 952            # uc + 176 (uc_mcontext) + 256 (sc_regs) + 520 (sc_extdesc.hdr)
    lwu t1, 0(t0)
    sd t1, 0(t2)
    lwu t4, 4(t0)
    sd t4, 8(t2)
    li t5, 0x53465457           # RISCV_V_MAGIC
    bne t1, t5, 1f
    ld t6, 16(t0)               # v_state.vl (hdr + 8: vstart, vl, vtype, vcsr, vlenb, datap)
    sd t6, 16(t2)
    ld t6, 40(t0)               # vlenb
    sd t6, 24(t2)
    ld a3, 48(t0)               # datap
    add a3, a3, t6              # v1 = datap + vlenb
    lbu a4, 0(a3)
    sd a4, 40(t2)
    add t0, t0, t4              # next header
1:  lwu t1, 0(t0)
    lwu t4, 4(t0)
    slli t4, t4, 32
    or t1, t1, t4
    sd t1, 64(t2)
    vsetvli t0, x0, e8, m1, ta, ma
    vmv.v.i v1, 9
    ret

.data
.balign 16
act:    .dword handler, 4, 0    # riscv: sa_handler, sa_flags (SA_SIGINFO), sa_mask
.balign 16
res:    .space 80
after:  .space 256
