"""arm64 signal frames — mirrors arch/arm64/kernel/signal.c.

The frame (uapi asm/sigcontext.h, asm/ucontext.h; offsets checked against the cross compiler's
headers in tests/kernel/signal/test_frame_layout.py)::

    rt_sigframe  +0     siginfo (128)
                 +128   ucontext: uc_flags, uc_link, uc_stack, uc_sigmask, __unused
                 +304   uc_mcontext = sigcontext: fault_address, regs[31], sp, pc, pstate
                 +592   __reserved[4096]: the records, each {u32 magic; u32 size} first, 16-aligned:
                        fpsimd_context, esr_context (after a fault), sve_context (on every
                        SVE-capable machine), extra_context (when the records do not fit),
                        the terminator
    above it: the frame record {fp, lr} that x29 points to.

``setup_sigframe_layout`` sizes the records as Linux does; the SVE record carries registers only
when the saved state is in SVE form (fp_type == FP_STATE_SVE), which after
``fpsimd_signal_preserve_current_state`` means: TIF_SVE set and the signal not delivered on the
way out of a syscall (a syscall keeps only the FPSIMD subset, ``fpsimd_syscall_enter``).  At
large VLs the SVE record moves out of ``__reserved`` behind an ``extra_context``.
``rt_sigreturn`` restores an SVE record with registers as SVE state with TIF_SVE set, and one
without as FPSIMD-only state with TIF_SVE cleared — so the next SVE instruction traps again.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from emukern.machine import regs

from emukern.errors import MemoryFault
from emukern.kernel.signal.defs import SA_RESTORER, SA_SIGINFO, SEGV_ACCERR, SEGV_MAPERR, SIGSEGV
from emukern.kernel.signal.state import KSigInfo, SigAction, sigsp
from emukern.kernel.mm.uaccess import copy_to_user_stack
from emukern.kernel.arch.arm64 import fpsimd as F
from emukern.kernel.thread_info import TIF_SVE

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel
    from emukern.kernel.task import Task
from emukern.kernel.signal import delivery as signal_delivery
from emukern.kernel.signal import generate as signal_generate
from emukern.kernel.signal import syscalls as signal_syscalls

FPSIMD_MAGIC, ESR_MAGIC, SVE_MAGIC, EXTRA_MAGIC = 0x46508001, 0x45535201, 0x53564501, 0x45585401
SVE_SIG_FLAG_SM = 1
UC = 128
UC_STACK = UC + 16
UC_SIGMASK = UC + 40
MCONTEXT = UC + 176
SC_FAULT = MCONTEXT
SC_REGS = MCONTEXT + 8
SC_SP = MCONTEXT + 256
SC_PC = MCONTEXT + 264
SC_PSTATE = MCONTEXT + 272
PSR_F_BIT, PSR_I_BIT, PSR_A_BIT, PSR_D_BIT = 0x40, 0x80, 0x100, 0x200   # pstate DAIF mask bits
RESERVED = MCONTEXT + 288                     # offsetof(rt_sigframe, uc.uc_mcontext.__reserved)
RESERVED_SIZE = 4096
SIZEOF_FRAME = RESERVED + RESERVED_SIZE       # sizeof(struct rt_sigframe) = 4688
FPSIMD_CONTEXT_SIZE = 16 + 32 * 16            # 528
ESR_CONTEXT_SIZE = 16
SVE_CONTEXT_HDR = 16
EXTRA_CONTEXT_SIZE = 32
TERMINATOR_SIZE = 16
FRAME_RECORD = 16
SIGFRAME_MAXSZ = 256 << 10
SIGTRAMP_WORDS = (0xD2801168, 0xD4000001)     # mov x8, #139 (__NR_rt_sigreturn); svc #0


# x0-x30, sp (SP_EL0: the CPU is at EL0 whenever a trap is handled), pc, nzcv in one libunicorn
# call each way: setup_rt_frame reads them, rt_sigreturn writes them back from the frame.
_FRAME_REGS = regs.regids("arm64", *[f"x{i}" for i in range(31)], "sp", "pc", "nzcv")
# The same registers for rt_sigreturn's write-back, as a tuple object of its own: Cpu.batch_reader
# and batch_writer cache their closure by the tuple's identity, one kind per tuple, so reading and
# writing through one tuple rebuilt the ctypes arrays on every delivery and every sigreturn.
_FRAME_REGS_W = tuple(list(_FRAME_REGS))
# The frame's sigcontext holds regs[31], sp, pc in _FRAME_REGS's order: those 33 registers move
# between the CPU and the frame as raw bytes (8 a register, little-endian), no Python int each.
_GPRS_BYTES = 33 * 8
_OFF_X1, _OFF_X29, _OFF_SP, _OFF_NZCV = 8, 29 * 8, 31 * 8, 33 * 8     # in that raw read
_U64X2 = struct.Struct("<QQ")
# setup_rt_frame's stores: uc_stack {ss_sp, ss_flags, pad, ss_size} + uc_sigmask in one pack;
# a record header {magic, size}; single words
_PACK_UC = struct.Struct("<QIIQQ")
_REC_HDR = struct.Struct("<II")
_U64 = struct.Struct("<Q")
_PACK_EXTRA = struct.Struct("<QI")            # extra_context: datap, size (after the header)
_ENTRY_REGS = regs.regids("arm64", "x0", "x1", "x2", "sp", "x29", "x30", "pc")


def user_regs(k: "Kernel", cpu: Any) -> list[int]:
    return cpu.batch_reader(_FRAME_REGS)()


def sve_sig_regs_size(vq: int) -> int:
    """SVE_SIG_REGS_SIZE: Z0-Z31 (vq*16 each), P0-P15 (vq*2 each), FFR (vq*2)."""
    return 32 * vq * 16 + 16 * vq * 2 + vq * 2


def sve_sig_context_size(vq: int) -> int:
    return SVE_CONTEXT_HDR + (sve_sig_regs_size(vq) if vq else 0)


def _r16(x: int) -> int:
    return (x + 15) & ~15


@dataclass
class Layout:
    """rt_sigframe_user_layout: offsets of the records from the frame base."""
    size: int = RESERVED
    limit: int = RESERVED + RESERVED_SIZE - TERMINATOR_SIZE - EXTRA_CONTEXT_SIZE
    fpsimd_offset: int = 0
    esr_offset: int = 0
    sve_offset: int = 0
    extra_offset: int = 0
    end_offset: int = 0

    def alloc(self, size: int, extend: bool = True) -> int | None:
        """__sigframe_alloc: the next 16-aligned slot; the first record that does not fit in
        __reserved allocates an extra_context and continues past the end of rt_sigframe."""
        padded = _r16(size)
        if padded > self.limit - self.size and not self.extra_offset and extend:
            self.limit += EXTRA_CONTEXT_SIZE
            off = self.alloc(EXTRA_CONTEXT_SIZE, extend=False)
            if off is None:
                self.limit -= EXTRA_CONTEXT_SIZE
                return None
            self.extra_offset = off
            self.size += TERMINATOR_SIZE          # the terminator of __reserved
            self.limit = SIGFRAME_MAXSZ - TERMINATOR_SIZE
        if padded > self.limit - self.size:
            return None
        off = self.size
        self.size += padded
        return off

    def alloc_end(self) -> None:
        self.limit += TERMINATOR_SIZE
        self.end_offset = self.alloc(TERMINATOR_SIZE) or 0
        self.limit = self.size

    @property
    def frame_size(self) -> int:
        """sigframe_size: never smaller than struct rt_sigframe."""
        return _r16(max(self.size, SIZEOF_FRAME))


def setup_sigframe_layout(k: "Kernel", th: Any, fault: bool, add_all: bool) -> tuple[Layout, int]:
    """(layout, vq of the SVE record: 0 for a header-only record)."""
    lay = Layout()
    lay.fpsimd_offset = lay.alloc(FPSIMD_CONTEXT_SIZE) or 0
    if add_all or fault:
        lay.esr_offset = lay.alloc(ESR_CONTEXT_SIZE) or 0
    vq = 0
    if k.config.has_sve:
        if add_all:
            vq = max(k.config.sve_vls) // 128
        elif th is not None and th.fp_type == F.FP_STATE_SVE:
            vq = th.vl // 128
        lay.sve_offset = lay.alloc(sve_sig_context_size(vq)) or 0
    lay.alloc_end()
    return lay, vq


def signal_minsigstksz(k: "Kernel") -> int:
    """minsigstksz_setup: every record at the largest VL, the frame record, alignment slack."""
    lay, _ = setup_sigframe_layout(k, None, fault=True, add_all=True)
    return lay.frame_size + _r16(FRAME_RECORD) + 16


def _u64(x: int) -> bytes:
    return (x & (2**64 - 1)).to_bytes(8, "little")


def _u32(x: int) -> bytes:
    return (x & 0xFFFFFFFF).to_bytes(4, "little")


def fpsimd_signal_preserve_current_state(k: "Kernel", cpu: Any, task: "Task") -> bytes:
    """Save the live FP/SVE state into the task's buffer; an SVE-form state also gets its FPSIMD
    view (the fpsimd_context record always holds V0-V31).  Returns that FPSIMD view (V0-V31,
    FPSR, FPCR: what the record copies) -- the bytes just saved when the save went through the
    register file, read back from the buffer otherwise."""
    th = task.thread
    # the FPSIMD form is read through the register file (no nested stub run, ~30 us); only SVE
    # state (Z above 128 bits, P, FFR) needs the sve_save_state stub
    fp = F.fpsimd_save_user_state(k, cpu, task, regs=True)
    if fp is not None:
        return fp                   # (nothing was queued: stub_sync would find the queue empty)
    cpu.stub_sync()
    if th.fp_type == F.FP_STATE_SVE:
        F.sve_to_fpsimd(k, th)
    a = k.sve_area
    return a.read(th.state + a.fp_off, 520)


_TEMPLATES: dict[tuple[bool, bool, bool, int], tuple[Layout, int, bytearray, int]] = {}


def _frame_template(k: "Kernel", th: Any, fault: bool) -> tuple[Layout, int, bytearray, int]:
    """The record layout of a frame and a buffer (frame + the frame record above it) with what
    does not change from one delivery to the next already in place: the record headers and the
    zeroes.  Made once per (fault, SVE form, VL) -- setup_sigframe_layout is a pure function
    of those -- and copied for each frame.  (layout, vq, buffer, the layout's frame_size)."""
    sve_form = k.config.has_sve and th.fp_type == F.FP_STATE_SVE
    key = (fault, k.config.has_sve, sve_form, th.vl)
    cache = _TEMPLATES
    ent = cache.get(key)
    if ent is None:
        lay, vq = setup_sigframe_layout(k, th, fault=fault, add_all=False)
        tpl = bytearray(lay.frame_size + FRAME_RECORD)
        _REC_HDR.pack_into(tpl, lay.fpsimd_offset, FPSIMD_MAGIC, FPSIMD_CONTEXT_SIZE)
        if lay.esr_offset:
            _REC_HDR.pack_into(tpl, lay.esr_offset, ESR_MAGIC, ESR_CONTEXT_SIZE)
        if lay.sve_offset:
            _REC_HDR.pack_into(tpl, lay.sve_offset, SVE_MAGIC, _r16(sve_sig_context_size(vq)))
            tpl[lay.sve_offset + 8:lay.sve_offset + 10] = (th.vl // 8).to_bytes(2, "little")
        if lay.extra_offset:
            _REC_HDR.pack_into(tpl, lay.extra_offset, EXTRA_MAGIC, EXTRA_CONTEXT_SIZE)
        ent = cache[key] = (lay, vq, tpl, lay.frame_size)
    return ent


def _sve_note(vq: int, vl: int, tif_sve: int, in_syscall: bool) -> str:
    if vq:
        return f"SVE record with registers (VL {vl}, TIF_SVE={tif_sve})"
    return (f"SVE record header only (VL {vl}, TIF_SVE={tif_sve}"
            f"{', in a syscall: FPSIMD-only save' if in_syscall and tif_sve else ''})")


def _frame_text(frame: int, size: int, sve: tuple[int, int, int, bool] | None,
                extra: tuple[int, int] | None) -> str:
    """setup_rt_frame's trap-log note, made when the log is read (machine.trap.note_text)."""
    note = "no SVE record (no SVE)" if sve is None else _sve_note(*sve)
    if extra is not None:
        note += f"; extra_context: {extra[0]} bytes at {extra[1]:#x}"
    return f"frame at {frame:#x} ({size} bytes); {note}"


def setup_rt_frame(k: "Kernel", cpu: Any, task: "Task", info: KSigInfo, ka: SigAction,
                   oldset: int) -> tuple | None:
    """get_sigframe + setup_sigframe + setup_return: the frame and the frame record above it
    are built in one buffer (from a per-layout template) and copied to the user stack once; the
    handler's registers are set in one batch.  Returns the trap-log note as a (function,
    values...) tuple: a delivery formats nothing that only the log's reader needs."""
    st = task.sigstate
    th = task.thread
    regs = cpu.batch_reader_raw(_FRAME_REGS, 8)()        # x0-x30, sp, pc, nzcv
    fp = fpsimd_signal_preserve_current_state(k, cpu, task)
    lay, vq, tpl, size = _frame_template(k, th, bool(st.fault_code))
    # get_sigframe: the frame record first, then the frame below it
    top = sigsp(st, _U64.unpack_from(regs, _OFF_SP)[0], ka)
    rec = (top - FRAME_RECORD) & ~0xF
    frame = rec - size                      # (rec is 16-aligned, and so is the size)
    buf = tpl[:]
    siginfo = ka.flags & SA_SIGINFO
    if siginfo:
        info.pack_into(buf, 0)              # (the template's first 128 bytes are zero: to_bytes)
    # __save_altstack: the flags as sigaltstack stored them (SS_AUTODISARM kept for rt_sigreturn)
    _PACK_UC.pack_into(buf, UC_STACK, st.sas_ss_sp, st.sas_ss_flags, 0,
                       st.sas_ss_size, oldset & 0xFFFF_FFFF_FFFF_FFFF)      # __save_altstack, uc_sigmask
    # sigcontext: fault_address, regs[31], sp, pc as the CPU holds them, pstate: EL0t, NZCV
    _U64.pack_into(buf, SC_FAULT, st.fault_address & 0xFFFF_FFFF_FFFF_FFFF)
    buf[SC_REGS:SC_REGS + _GPRS_BYTES] = memoryview(regs)[:_GPRS_BYTES]
    _U64.pack_into(buf, SC_PSTATE, _U64.unpack_from(regs, _OFF_NZCV)[0] & 0xF000_0000)
    # fpsimd_context: fpsr, fpcr after the header, then V0-V31 (the buffer keeps V0-V31, FPSR, FPCR)
    o = lay.fpsimd_offset
    buf[o + 8:o + 16] = fp[512:520]
    buf[o + 16:o + 528] = fp[:512]
    if lay.esr_offset:
        _U64.pack_into(buf, lay.esr_offset + 8, st.fault_code & 0xFFFF_FFFF_FFFF_FFFF)
    sve = None
    if lay.sve_offset:
        o = lay.sve_offset
        tif_sve = int(bool(task.flags & TIF_SVE))
        if vq:
            a = k.sve_area
            vl = th.sve_state_vl or th.vl
            zb, pb = vq * 16, vq * 2
            for i in range(32):
                buf[o + 16 + i * zb:o + 16 + (i + 1) * zb] = a.zreg(th.state, vl, i)
            p0 = o + 16 + 32 * zb
            for i in range(17):                    # P0-P15 then FFR
                buf[p0 + i * pb:p0 + (i + 1) * pb] = a.preg(th.state, vl, i)
        sve = (vq, th.vl, tif_sve, bool(th.in_syscall))
    extra = None
    if lay.extra_offset:
        o = lay.extra_offset
        datap = frame + o + EXTRA_CONTEXT_SIZE + TERMINATOR_SIZE
        extra_size = frame + size - datap
        _PACK_EXTRA.pack_into(buf, o + 8, datap, extra_size)
        extra = (extra_size, datap)
    buf[size:size + 16] = memoryview(regs)[_OFF_X29:_OFF_SP]      # the frame record {fp, lr} at rec
    if not copy_to_user_stack(k, cpu, task, frame, buf):
        return None
    # setup_return: x0 (x1, x2 with SA_SIGINFO), sp, the frame record in x29, x30, pc — one batch
    if siginfo:
        x1, x2 = frame, frame + UC
    else:
        x1, x2 = _U64X2.unpack_from(regs, _OFF_X1)
    cpu.batch_writer(_ENTRY_REGS)((info.signo, x1, x2, frame, rec,
                                   ka.restorer if ka.flags & SA_RESTORER else signal_delivery.sigtramp_addr(k),
                                   ka.handler))
    return (_frame_text, frame, size, sve, extra)


def _sigreturn_text(frame: int, note: str) -> str:
    return f"rt_sigreturn: frame at {frame:#x} restored; {note}"


def sys_rt_sigreturn(k: "Kernel", cpu: Any, task: "Task") -> int:
    """rt_sigreturn: the frame at sp restored (restore_sigframe); x0 comes back as the frame
    holds it, the return value that leaves it unchanged."""
    frame = cpu.sp
    task.sigstate.returned += 1
    ok, why, x0 = restore_sigframe(k, cpu, task, frame)
    if not ok:
        signal_delivery._log_signal(k, cpu, task, f"rt_sigreturn: bad frame at {frame:#x} ({why}): SIGSEGV")
        arm64_notify_segfault(k, cpu, task, cpu.sp, f"rt_sigreturn: bad signal frame at {frame:#x}: {why}")
        return 0
    signal_delivery._log_signal(k, cpu, task, (_sigreturn_text, frame, why))
    return x0


def arm64_notify_segfault(k: "Kernel", cpu: Any, task: "Task", addr: int, why: str) -> None:
    """Linux's sys_rt_sigreturn ends a bad frame with arm64_notify_segfault(regs->sp): a fault-
    style SIGSEGV (force_signal_inject -> arm64_notify_die), not an SI_KERNEL one.  Its si_addr is
    regs->sp *after* restore_sigframe has already copied the frame's registers (so the forged sp
    when the frame got that far), and its si_code is SEGV_MAPERR only when find_vma finds no
    mapping at or above that address, SEGV_ACCERR otherwise.  The arm64 signal selftests check
    for exactly SEGV_ACCERR to tell the kernel's SIGSEGV from one of their own bugs.  As
    arm64_notify_die does for a user-mode fault, the next frame carries fault_address 0 and the
    error code (0 here) in its esr_context."""
    code = SEGV_ACCERR if any(m.end > addr for m in task.mm.mappings) else SEGV_MAPERR
    st = task.sigstate
    st.fault_address = 0
    st.fault_code = 0
    signal_generate.force_sig_info(k, cpu, task, KSigInfo(SIGSEGV, code, addr=addr, report={
        "signal": SIGSEGV, "signame": "SIGSEGV", "tid": task.tid, "addr": addr, "why": why}))


def _rd32(mm: Any, addr: int) -> int:
    return int.from_bytes(mm.read(addr, 4), "little")


class _FrameReader:
    """copy_from_user for rt_sigreturn: served from the frame already copied in (one read of
    rt_sigframe) when the span lies inside it, from the address space otherwise (records behind
    an extra_context, a datap pointing elsewhere) — with the same faults."""

    def __init__(self, mm: Any, base: int, raw: bytes) -> None:
        self.mm, self.base, self.raw, self.end = mm, base, raw, base + len(raw)

    def read(self, addr: int, n: int) -> bytes:
        if self.base <= addr and addr + n <= self.end:
            o = addr - self.base
            return self.raw[o:o + n]
        return self.mm.read(addr, n)


def parse_user_sigframe(mm: Any, frame: int) -> tuple[dict[str, tuple[int, int]], str]:
    """Walk the records (following one extra_context); ({name: (address, size)}, error).
    ``mm`` is anything with ``read(addr, n)`` (the address space or a _FrameReader)."""
    base, offset, limit = frame + RESERVED, 0, RESERVED_SIZE
    have_extra = False
    found: dict[str, tuple[int, int]] = {}
    for _ in range(64):
        if limit - offset < 8:
            return found, "records run past the end of the frame"
        if offset % 16:
            return found, "misaligned record"
        head = base + offset
        magic, size = _REC_HDR.unpack(mm.read(head, 8))
        if limit - offset < size:
            return found, f"record {magic:#x} of size {size} overruns the space"
        if magic == 0:
            if size:
                return found, "terminator with a size"
            return found, ""
        if magic == FPSIMD_MAGIC:
            if "fpsimd" in found:
                return found, "two fpsimd records"
            found["fpsimd"] = (head, size)
        elif magic == ESR_MAGIC:
            pass
        elif magic == SVE_MAGIC:
            if "sve" in found:
                return found, "two SVE records"
            found["sve"] = (head, size)
        elif magic == EXTRA_MAGIC:
            if have_extra:
                return found, "a second extra_context"
            if size < EXTRA_CONTEXT_SIZE:
                return found, "extra_context too small"
            userp = head + size
            datap = int.from_bytes(mm.read(head + 8, 8), "little")
            extra_size = _rd32(mm, head + 16)
            if limit - offset - size < TERMINATOR_SIZE:
                return found, "no terminator after extra_context"
            if _rd32(mm, userp) or _rd32(mm, userp + 4):
                return found, "no terminator after extra_context"
            userp += TERMINATOR_SIZE
            have_extra = True
            if datap % 16 or extra_size % 16 or datap != userp:
                return found, "extra_context datap/size invalid"
            if extra_size > frame + SIGFRAME_MAXSZ - userp:
                return found, "extra_context unreasonably large"
            base, offset, limit = datap, 0, extra_size
            continue
        else:
            return found, f"unknown record magic {magic:#x}"
        if size < 8:
            return found, f"record {magic:#x} smaller than its header"
        offset += size
    return found, "too many records"


_HDR_FPSIMD = _REC_HDR.pack(FPSIMD_MAGIC, FPSIMD_CONTEXT_SIZE)
_HDR_SVE_ONLY = _REC_HDR.pack(SVE_MAGIC, SVE_CONTEXT_HDR)
_HDR_END = bytes(8)
_AFTER_FPSIMD = RESERVED + FPSIMD_CONTEXT_SIZE


def _template_records(raw: bytes, frame: int) -> dict[str, tuple[int, int]] | None:
    """The records of a frame laid out as setup_rt_frame lays out an FPSIMD-only one (fpsimd_context
    first, then a header-only sve_context or none, then the terminator), read from the copied-in
    frame: what parse_user_sigframe's walk finds for those bytes, without the walk.  None for any
    other layout (the walk decides, with its errors)."""
    if raw[RESERVED:RESERVED + 8] != _HDR_FPSIMD:
        return None
    nxt = raw[_AFTER_FPSIMD:_AFTER_FPSIMD + 8]
    if nxt == _HDR_END:
        return {"fpsimd": (frame + RESERVED, FPSIMD_CONTEXT_SIZE)}
    if nxt == _HDR_SVE_ONLY and raw[_AFTER_FPSIMD + 16:_AFTER_FPSIMD + 24] == _HDR_END:
        return {"fpsimd": (frame + RESERVED, FPSIMD_CONTEXT_SIZE),
                "sve": (frame + _AFTER_FPSIMD, SVE_CONTEXT_HDR)}
    return None


def restore_sigframe(k: "Kernel", cpu: Any, task: "Task", frame: int) -> tuple[bool, str, int]:
    """(ok, note, x0 as restored: rt_sigreturn's return value, so the register is not read back)."""
    if frame % 16:
        return False, "sp not 16-byte aligned", 0
    mm: Any = task.mm           # (then the frame reader below, which reads the copy in ``raw``)
    try:
        raw = mm.read(frame, SIZEOF_FRAME)
    except MemoryFault:
        return False, "frame not readable", 0
    signal_syscalls.set_current_blocked(k, task, _U64.unpack_from(raw, UC_SIGMASK)[0])
    pstate = _U64.unpack_from(raw, SC_PSTATE)[0]
    # x0-x30, sp, pc and NZCV in one libunicorn batch, the first 33 straight from the frame's bytes
    cpu.batch_writer_raw(_FRAME_REGS_W)(raw[SC_REGS:SC_REGS + _GPRS_BYTES] + _U64.pack(pstate & 0xF000_0000))
    mm = _FrameReader(mm, frame, raw)
    # valid_user_regs -> valid_native_regs: only AArch64 EL0t (M[4:0] == 0) with all of D, A, I
    # and F clear is a user state; anything else (a mangled mode, the compat bit, masked
    # exceptions) fails the frame, and the kernel keeps just NZCV (done above).
    if pstate & (0x1F | PSR_D_BIT | PSR_A_BIT | PSR_I_BIT | PSR_F_BIT):
        return False, f"pstate {pstate:#x} is not EL0t with DAIF clear", 0
    recs = _template_records(raw, frame)
    if recs is None:
        try:
            recs, err = parse_user_sigframe(mm, frame)
        except MemoryFault:
            return False, "record not readable", 0
        if err:
            return False, err, 0
    if "fpsimd" not in recs:
        return False, "no fpsimd record", 0
    try:
        if "sve" in recs:
            ok, note = restore_sve_fpsimd_context(k, cpu, task, recs, mm)
        else:
            ok, note = restore_fpsimd_context(k, cpu, task, recs, mm)
    except MemoryFault:
        return False, "record data not readable", 0
    if not ok:
        return False, note, 0
    if not signal_syscalls.restore_altstack_raw(k, cpu, task, raw[UC_STACK:UC_STACK + 24],
                                                _U64.unpack_from(raw, SC_SP)[0]):
        return False, "uc_stack not readable", 0
    return True, note, _U64.unpack_from(raw, SC_REGS)[0]


def _fpsimd_from_record(mm: Any, recs: dict[str, tuple[int, int]]) -> bytes:
    """The fpsimd_context record's V0-V31, FPSR, FPCR in the task buffer's order (the record
    keeps fpsr, fpcr first): the bytes __copy_from_user fills uw.fpsimd_state with."""
    head, _ = recs["fpsimd"]
    raw = mm.read(head + 8, 520)                 # fpsr, fpcr, V0-V31
    return raw[8:] + raw[:8]


def fpsimd_update_current_state(k: "Kernel", cpu: Any, task: "Task", state: bytes) -> None:
    """The FPSIMD view (V0-V31, FPSR, FPCR) goes into the task's buffer (and into the low bits of
    Z if TIF_SVE); the registers are loaded on the way out (TIF_FOREIGN_FPSTATE), by
    task_fpsimd_load."""
    th = task.thread
    a = k.sve_area
    a.write(th.state + a.fp_off, state)
    if task.flags & TIF_SVE:
        F.fpsimd_to_sve(k, th)
    F.fpsimd_flush_task_state(th)


def restore_fpsimd_context(k: "Kernel", cpu: Any, task: "Task", recs: dict[str, tuple[int, int]],
                           mm: Any = None) -> tuple[bool, str]:
    if recs["fpsimd"][1] != FPSIMD_CONTEXT_SIZE:
        return False, "fpsimd record of the wrong size"
    cpu.stub_sync()
    th = task.thread
    had = th.tif_sve
    state = _fpsimd_from_record(mm or task.mm, recs)
    th.tif_sve = False
    th.fp_type = F.FP_STATE_FPSIMD
    fpsimd_update_current_state(k, cpu, task, state)
    return True, "FPSIMD-only state" + (" (TIF_SVE cleared)" if had else "")


def restore_sve_fpsimd_context(k: "Kernel", cpu: Any, task: "Task", recs: dict[str, tuple[int, int]],
                               mm: Any = None) -> tuple[bool, str]:
    mm = mm or task.mm
    th = task.thread
    head, size = recs["sve"]
    hdr = mm.read(head, 16)
    vl = int.from_bytes(hdr[8:10], "little")
    flags = int.from_bytes(hdr[10:12], "little")
    if flags & SVE_SIG_FLAG_SM:
        return False, "streaming-mode SVE record (SME is not modelled)"
    if vl != th.vl // 8:
        return False, f"SVE record VL {vl * 8} != the task's VL {th.vl}"
    if recs["fpsimd"][1] != FPSIMD_CONTEXT_SIZE:
        return False, "fpsimd record of the wrong size"
    cpu.stub_sync()
    had = task.flags & TIF_SVE
    if size <= SVE_CONTEXT_HDR:
        task.flags &= ~TIF_SVE
        th.fp_type = F.FP_STATE_FPSIMD
        note = "SVE header only: FPSIMD-only state" + (" (TIF_SVE cleared)" if had else "")
    else:
        vq = vl // 16
        if size < sve_sig_context_size(vq):
            return False, f"SVE record of size {size} too small for VL {vl * 8}"
        F.fpsimd_flush_task_state(th)
        F.sve_alloc(k, th)
        a = k.sve_area
        data = mm.read(head + 16, sve_sig_regs_size(vq))
        zb, pb = vq * 16, vq * 2
        st = {"vl": th.vl, "z": [data[i * zb:(i + 1) * zb] for i in range(32)],
              "p": [data[32 * zb + i * pb:32 * zb + (i + 1) * pb] for i in range(16)],
              "ffr": data[32 * zb + 16 * pb:32 * zb + 17 * pb]}
        fpsr, fpcr = a.fpsr_fpcr(th.state)
        a.encode_sve(th.state, {**st, "fpsr": fpsr, "fpcr": fpcr})
        th.tif_sve = True
        th.fp_type = F.FP_STATE_SVE
        th.sve_state_vl = th.vl
        note = "SVE state restored, TIF_SVE set"
    fpsimd_update_current_state(k, cpu, task, _fpsimd_from_record(mm, recs))
    return True, note
