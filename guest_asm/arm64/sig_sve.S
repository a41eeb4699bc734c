// sig_sve: SVE state through two signals — SIGSEGV from a fault (delivered outside a syscall:
// TIF_SVE set and live SVE state, so the sve_context carries registers) and SIGUSR1 from
// kill(getpid()) (delivered on syscall return: FPSIMD-only save, header-only sve_context).
// z1 = 5 in every byte; each handler walks uc_mcontext.__reserved (following an extra_context),
// records the sve_context, sets z1 = 9 and returns through the kernel's trampoline (x30); the
// SIGSEGV handler also steps the frame's pc past the faulting load.  After each rt_sigreturn z1
// is stored.  Results, 8-byte slots: blk = res + 64 * (sig == SIGUSR1):
//   blk+0 sve size, +8 sve vl (bytes), +16 z1[0] in the record, +24 z1[vl-1] in the record,
//   +32 1 if an extra_context was followed, +40 esr_context.esr, +48 fault_address,
//   +56 1 if the first record is fpsimd_context
//   res+128: z1[0], z1[vl-1] after the SIGSEGV return; res+144: the same after SIGUSR1's
.globl _start
_start:
    mov x0, #11                     // rt_sigaction(SIGSEGV, &act, NULL, 8)
    adr x1, act
    mov x2, #0
    mov x3, #8
    mov x8, #134
    svc #0
    mov x0, #10                     // rt_sigaction(SIGUSR1, &act, NULL, 8)
    adr x1, act
    mov x2, #0
    mov x3, #8
    mov x8, #134
    svc #0
    ptrue p0.b                      // first SVE use: traps (do_sve_acc), TIF_SVE set
    dup z1.b, #5
    mov x9, #8
    ldr x10, [x9]                   // SIGSEGV (SEGV_MAPERR at 8); the handler skips this load
    adr x11, res
    add x11, x11, #128
    bl store_z1
    mov x8, #172                    // getpid
    svc #0
    mov x1, #10
    mov x8, #129                    // kill(getpid(), SIGUSR1)
    svc #0
    adr x11, res
    add x11, x11, #144
    bl store_z1                     // SVE again: traps if rt_sigreturn cleared TIF_SVE
    mov x0, #0
    mov x8, #94
    svc #0

store_z1:                           // x11 <- z1[0], z1[vl-1]
    ptrue p0.b
    adr x12, zbuf
    st1b z1.b, p0, [x12]
    ldrb w13, [x12]
    str x13, [x11]
    rdvl x14, #1
    sub x14, x14, #1
    ldrb w13, [x12, x14]
    str x13, [x11, #8]
    ret

handler:                            // x0 = sig, x1 = siginfo, x2 = ucontext
    adr x3, res
    cmp x0, #10
    b.ne 1f
    add x3, x3, #64
1:  ldr x4, [x2, #176]              // uc_mcontext.fault_address
    str x4, [x3, #48]
    add x5, x2, #464                // uc_mcontext.__reserved
    ldr w6, [x5]
    movz w7, #0x8001
    movk w7, #0x4650, lsl #16       // FPSIMD_MAGIC
    cmp w6, w7
    cset x8, eq
    str x8, [x3, #56]
2:  ldr w6, [x5]                    // magic
    ldr w7, [x5, #4]                // size
    cbz w6, 9f
    movz w8, #0x4501
    movk w8, #0x5356, lsl #16       // SVE_MAGIC
    cmp w6, w8
    b.ne 3f
    str x7, [x3]
    ldrh w9, [x5, #8]               // vl in bytes
    str x9, [x3, #8]
    cmp w7, #16
    b.le 8f
    lsr x10, x9, #4                 // vq
    lsl x10, x10, #4                // vq * 16: Z1 starts at 16 + vq*16
    add x10, x10, #16
    add x10, x5, x10
    ldrb w11, [x10]
    str x11, [x3, #16]
    sub x12, x9, #1
    ldrb w11, [x10, x12]
    str x11, [x3, #24]
    b 8f
3:  movz w8, #0x5401
    movk w8, #0x4558, lsl #16       // EXTRA_MAGIC
    cmp w6, w8
    b.ne 4f
    mov x9, #1
    str x9, [x3, #32]
    ldr x5, [x5, #8]                // datap: continue there
    b 2b
4:  movz w8, #0x5201
    movk w8, #0x4553, lsl #16       // ESR_MAGIC
    cmp w6, w8
    b.ne 8f
    ldr x9, [x5, #8]
    str x9, [x3, #40]
8:  add x5, x5, x7
    b 2b
9:  cmp x0, #11
    b.ne 10f
    ldr x4, [x2, #440]              // uc_mcontext.pc: step over the faulting load
    add x4, x4, #4
    str x4, [x2, #440]
10: dup z1.b, #9
    ret

.data
.balign 16
act:    .dword handler, 0x4, 0, 0   // sa_handler, sa_flags = SA_SIGINFO, sa_restorer, sa_mask
.balign 16
res:    .space 160
zbuf:   .space 256
