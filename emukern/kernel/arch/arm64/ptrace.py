"""NT_ARM_SVE, the SVE register set of ptrace and of core files (arch/arm64/kernel/ptrace.c's
sve_get / sve_set, SVE_VEC only: the machine has no SME, so NT_ARM_SSVE does not exist).

The regset is a ``user_sve_header`` {size, max_size, vl, max_vl, flags, reserved} followed by a
payload in one of two forms, which ``flags & SVE_PT_REGS_SVE`` names:

* FPSIMD form (SVE_PT_REGS_FPSIMD): a ``user_fpsimd_state`` at offset 16 — what a task without
  live SVE state (TIF_SVE clear) reads, and what a debugger may write to drop its SVE state;
* SVE form: Z0-Z31, P0-P15, FFR at the task's VL, then FPSR and FPCR at the next 16-byte boundary
  (uapi/asm/ptrace.h's SVE_PT_SVE_*_OFFSET macros), the task's state with TIF_SVE set.

``size`` is SVE_PT_SIZE for the task's VL and form; reads are padded with zeros to a multiple of
16 (SVE_VQ_BYTES, the regset's unit).  A write goes first through vec_set_vector_length (the
header's VL, and its VL_INHERIT / VL_ONEXEC flags, exactly as prctl(PR_SVE_SET_VL) would take
them), so a VL the machine does not offer is rounded down; register data for a VL that did not
take is -EIO, because its layout would be wrong.
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.kernel.arch.arm64.fpsimd import (FP_STATE_FPSIMD, FP_STATE_SVE, fpsimd_flush_task_state,
                                         fpsimd_to_sve, supported_vls, sve_alloc, sve_to_fpsimd,
                                         vec_set_vector_length)

if TYPE_CHECKING:
    from emukern.kernel.task import Task

NT_ARM_SVE = 0x405
SVE_PT_REGS_SVE = 1               # SVE_PT_REGS_MASK; 0 is SVE_PT_REGS_FPSIMD
SVE_PT_VL_INHERIT = 2             # PR_SVE_VL_INHERIT >> 16
SVE_PT_VL_ONEXEC = 4              # PR_SVE_SET_VL_ONEXEC >> 16
SVE_VQ_BYTES = 16
SVE_VQ_MAX = 512
ARCH_SVE_VQ_MAX = 16              # ZCR_ELx.LEN's 4 bits: 2048-bit VL is the architecture's limit
HEADER = struct.Struct("<IIHHHH")  # struct user_sve_header
_FPSIMD_STATE = 528               # sizeof(struct user_fpsimd_state): V0-V31, FPSR, FPCR, 2 pads


def _align16(n: int) -> int:
    return (n + SVE_VQ_BYTES - 1) & ~(SVE_VQ_BYTES - 1)


def sve_pt_ffr_end(vq: int) -> int:
    """SVE_PT_SVE_FFR_OFFSET(vq) + SVE_PT_SVE_FFR_SIZE(vq): the end of Z0-31, P0-15 and FFR."""
    return HEADER.size + 32 * vq * SVE_VQ_BYTES + 17 * vq * 2


def sve_pt_fpsr_offset(vq: int) -> int:
    """SVE_PT_SVE_FPSR_OFFSET(vq): FPSR (then FPCR) at the 16-byte boundary after FFR."""
    return _align16(sve_pt_ffr_end(vq))


def sve_pt_size(vq: int, flags: int) -> int:
    """SVE_PT_SIZE(vq, flags): header and payload of the form ``flags`` names."""
    if flags & SVE_PT_REGS_SVE:
        return HEADER.size + _align16(sve_pt_fpsr_offset(vq) + 8 - HEADER.size)
    return HEADER.size + _FPSIMD_STATE


# the regset's size in SVE_VQ_BYTES units (aarch64_regsets[REGSET_SVE].n): a GETREGSET/SETREGSET
# length is cut to it.  It is sized for the largest VL the architecture allows (ARCH_SVE_VQ_MAX),
# not the uapi's SVE_VQ_MAX: a 64 KiB iovec comes back as 8,768 bytes on Debian 13's 6.12
NT_ARM_SVE_UNITS = sve_pt_size(ARCH_SVE_VQ_MAX, SVE_PT_REGS_SVE) // SVE_VQ_BYTES


def _sync_saved_state(k: Any) -> None:
    """What a switch or an earlier request queued on any CPU has reached the task's buffer."""
    for c in k.cpus:
        c.stub_sync()


def fpr_get(k: Any, child: "Task") -> bytes:
    """fpr_get / __fpr_get: the saved user_fpsimd_state (the SVE form converted first:
    sve_sync_to_fpsimd)."""
    th = child.thread
    _sync_saved_state(k)
    if th.fp_type == FP_STATE_SVE:
        sve_to_fpsimd(k, th)
    a = k.sve_area
    return a.read(th.state + a.fp_off, _FPSIMD_STATE)


def fpr_set(k: Any, child: "Task", data: bytes, zeropad: bool = True) -> None:
    """__fpr_set (+ fpr_set's sve_sync_from_fpsimd_zeropad when ``zeropad``): the first
    len(data) bytes of user_fpsimd_state replace the saved ones.  A task with TIF_SVE then has
    its whole SVE register file zeroed and V0-V31 written into the low 128 bits of Z0-Z31 (as
    fpr_set does: a debugger writing the FPSIMD view gets a defined SVE state, not stale high
    bits); an SVE-form buffer without TIF_SVE is kept in step (emukern loads by fp_type).  The
    task's registers are reloaded at its next return to user (fpsimd_flush_task_state)."""
    th = child.thread
    full = bytearray(fpr_get(k, child))
    full[:len(data)] = data[:_FPSIMD_STATE]
    a = k.sve_area
    a.write(th.state + a.fp_off, bytes(full))
    if zeropad and th.tif_sve:
        sve_alloc(k, th)                # memset(sve_state, 0, SVE_SIG_REGS_SIZE(vq))
        fpsimd_to_sve(k, th)            # __fpsimd_to_sve at the task's VL
    elif th.fp_type == FP_STATE_SVE:
        fpsimd_to_sve(k, th)
    fpsimd_flush_task_state(th)


def sve_get(k: Any, child: "Task") -> bytes:
    """sve_get_common(SVE_VEC): the header, then the register form the *saved* state is in
    (sve_init_header_from_task looks at fp_type, not TIF_SVE), zero-padded to ALIGN(size, 16).
    So a task stopped inside a syscall after using SVE — TIF_SVE still set, but its state saved
    in FPSIMD form, because fpsimd_syscall_enter lets the save drop the SVE-only bits — reads as
    the FPSIMD form, as Debian 13's 6.12 shows it.  The caller has saved the live state of a task
    on a CPU (fpsimd_preserve_current_state) where it can be live."""
    th = child.thread
    vl = th.vl // 8
    vq = vl // SVE_VQ_BYTES
    max_vl = max(supported_vls(k)) // 8
    flags = SVE_PT_VL_INHERIT if th.tif_sve_vl_inherit else 0
    _sync_saved_state(k)
    # (emukern can keep an SVE-form buffer for a task without TIF_SVE, which Linux never has
    # outside streaming mode: that task's state is FPSIMD for every reader)
    if th.tif_sve and th.fp_type == FP_STATE_SVE:
        flags |= SVE_PT_REGS_SVE
    size = sve_pt_size(vq, flags)
    head = HEADER.pack(size, sve_pt_size(max_vl // SVE_VQ_BYTES, SVE_PT_REGS_SVE), vl, max_vl, flags, 0)
    if not flags & SVE_PT_REGS_SVE:
        return head + fpr_get(k, child)
    if th.sve_state_vl != th.vl:
        # an SVE buffer laid out for another VL (a VL change queued on the task): the FPSIMD
        # bits are the ones both layouts agree on
        fpsimd_to_sve(k, th)
    a = k.sve_area
    out = bytearray(size)
    out[:HEADER.size] = head
    z = 32 * vl
    out[HEADER.size:HEADER.size + z] = a.read(th.state, z)                  # Z0-Z31
    p = 17 * vq * 2
    out[HEADER.size + z:HEADER.size + z + p] = a.read(th.state + a.p_off, p)  # P0-P15, FFR
    fpsr = sve_pt_fpsr_offset(vq)
    out[fpsr:fpsr + 8] = a.read(th.state + a.fpsr_off, 8)                    # FPSR, FPCR
    return bytes(out)


def sve_set(k: Any, cpu: Any, child: "Task", data: bytes) -> int:
    """sve_set_common(SVE_VEC) with ``data`` = the bytes the tracer's iovec gave (count)."""
    if len(data) < HEADER.size:
        return -E.EINVAL
    _size, _max_size, vl, _max_vl, flags, _ = HEADER.unpack_from(data)
    th = child.thread
    _sync_saved_state(k)
    # every flag but the register form is vec_set_vector_length's to check and apply
    ret = vec_set_vector_length(k, cpu, child, vl, (flags & ~SVE_PT_REGS_SVE) << 16)
    if ret:
        fpsimd_flush_task_state(th)
        return ret
    vq = th.vl // 8 // SVE_VQ_BYTES              # the VL that took, maybe less than asked for
    body = data[HEADER.size:]
    if not flags & SVE_PT_REGS_SVE:
        fpr_set(k, child, body, zeropad=False)   # __fpr_set at SVE_PT_FPSIMD_OFFSET
        th.tif_sve = False
        th.fp_type = FP_STATE_FPSIMD
        fpsimd_flush_task_state(th)
        return 0
    # SVE form, or no registers at all (for compatibility empty flags mean SVE)
    if body and vq != vl // SVE_VQ_BYTES:
        fpsimd_flush_task_state(th)
        return -E.EIO
    had_sve = th.tif_sve
    if th.fp_type == FP_STATE_SVE and not had_sve:
        sve_to_fpsimd(k, th)            # the FPSIMD bits are kept before the buffer is cleared
    sve_alloc(k, th)                    # sve_alloc(target, true): the SVE registers zeroed
    if not had_sve:
        fpsimd_to_sve(k, th)            # fpsimd_sync_to_sve: a short write keeps V0-V31
    th.tif_sve = True
    th.fp_type, th.sve_state_vl = FP_STATE_SVE, th.vl
    a = k.sve_area
    vlb = vq * SVE_VQ_BYTES
    zregs = body[:32 * vlb]
    a.write(th.state, zregs)
    pregs = body[32 * vlb:32 * vlb + 17 * vq * 2]
    a.write(th.state + a.p_off, pregs)
    fpsr = sve_pt_fpsr_offset(vq) - HEADER.size    # the padding before it is ignored
    a.write(th.state + a.fpsr_off, body[fpsr:fpsr + 8])
    fpsimd_flush_task_state(th)
    return 0


# ---- single step (arch/arm64/kernel/debug-monitors.c user_enable/disable_single_step) ------------
def user_single_step(child: "Task", on: bool) -> bool:
    """Arm or disarm the software step of a stopped tracee: SPSR.SS in its saved user context
    (the "ss" key the CPU loads with the context, with MDSCR_EL1.SS implied), so the first user
    instruction after the return to EL0 completes and then takes the step exception."""
    if on:
        child.ctx["ss"] = True
    else:
        child.ctx.pop("ss", None)
    return True

