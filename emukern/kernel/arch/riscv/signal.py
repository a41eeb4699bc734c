"""RISC-V signal frames — mirrors arch/riscv/kernel/signal.c (Linux 6.5+: the V extension record).

The frame, as uapi asm/ucontext.h + asm/sigcontext.h lay it out (offsets checked against the cross
compiler's headers in tests/kernel/signal/test_frame_layout.py)::

    rt_sigframe  +0     siginfo (128)
                 +128   ucontext: uc_flags, uc_link, uc_stack (stack_t), uc_sigmask, __unused
                 +304   uc_mcontext = sigcontext: sc_regs (pc, x1..x31)
                 +560   sc_fpregs: the D state (f0..f31, fcsr) — or, read as
                        __riscv_extra_ext_header: reserved word at +516 of it, first record
                        header at +520
    then the extension records: RISCV_V_MAGIC {__riscv_v_ext_state, datap -> the 32 registers},
    END (magic 0, size 0).

``save_v_state`` (only when the task's V state is on, riscv_v_vstate_query) first calls
``riscv_v_vstate_save``, which saves the live registers *only if the context is Dirty*; the
record is then filled from the task's saved context.  So under ``riscv-discard=deferred``
("riscv: vector: treat VS_INITIAL as discard", Andy Chiu), a signal delivered on the way out of
a syscall — VS=Initial — gets the *last saved* context, not the registers the program had
before the syscall.  ``__restore_v_state`` copies the record back and calls
``riscv_v_vstate_set_restore`` (Clean after that patch, Initial before it), so the frame's
registers are what the program runs with after rt_sigreturn.

Under ``riscv-discard=optimize-restore`` ("riscv: optimize Vector context restore on syscall", Andy
Chiu) the record comes through ``riscv_v_ucontext_save``: a signal delivered while VS=Initial carries
the nulled state (all ones, vl=0, vtype=vill), the same thing the program would see in its registers.
``__restore_v_state`` arms the restore *and* marks the context Clean before copying the record in
(the series' "potential ABI break in signal" fix: its set_restore no longer marks Clean, so without
it an Initial state would be clobbered and the handler's edits to the record lost).
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from emukern.machine import regs

from emukern.errors import MemoryFault
from emukern.kernel.signal.defs import SA_ONSTACK, SIGSEGV, SI_KERNEL, SS_AUTODISARM
from emukern.kernel.signal.state import KSigInfo, SigAction
from emukern.kernel.mm.uaccess import copy_to_user_stack
from emukern.kernel.arch.riscv import vector
from emukern.machine.cpu_riscv import VS_CLEAN, VS_NAMES, VS_OFF

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel
    from emukern.kernel.task import Task
from emukern.kernel.signal import delivery as signal_delivery
from emukern.kernel.signal import generate as signal_generate
from emukern.kernel.signal import syscalls as signal_syscalls

RISCV_V_MAGIC = 0x53465457
END_MAGIC = 0
END_HDR_SIZE = 0
CTX_HDR = 8                         # struct __riscv_ctx_hdr {u32 magic; u32 size}
V_STATE = 48                        # struct __riscv_v_ext_state: vstart vl vtype vcsr vlenb datap

UC = 128                            # offsetof(rt_sigframe, uc)
UC_STACK = UC + 16
UC_SIGMASK = UC + 40
MCONTEXT = UC + 176                 # uc_mcontext (sigcontext is 16-byte aligned)
SC_FPREGS = MCONTEXT + 256          # after sc_regs
SC_RESERVED = SC_FPREGS + 516       # __riscv_extra_ext_header.reserved
SC_EXT_HDR = SC_FPREGS + 520        # __riscv_extra_ext_header.hdr
SIZEOF_SIGCONTEXT = 256 + 528
SIZEOF_FRAME = MCONTEXT + SIZEOF_SIGCONTEXT      # sizeof(struct rt_sigframe) = 1088

SIGTRAMP_WORDS = (0x08B00893, 0x00000073)        # li a7, 139 (__NR_rt_sigreturn); ecall


# One libunicorn call reads everything a frame holds of the scalar and FP state (pc, x1-x31,
# f0-f31, fcsr); rt_sigreturn writes back only the registers whose value the frame changes.
_FRAME_REGS = regs.regids("riscv64", "pc", *[f"x{i}" for i in range(1, 32)], *[f"f{i}" for i in range(32)], "fcsr")
_PACK_REGS = struct.Struct("<32Q")
# setup_rt_frame's handler entry: pc, ra, sp, a0-a2
_ENTRY_REGS = regs.regids("riscv64", "pc", "ra", "sp", "a0", "a1", "a2")
_GPR_REGS = _FRAME_REGS[:32]          # pc, x1-x31: what rt_sigreturn writes back in one batch
_FP_REGS = _FRAME_REGS[32:]           # f0-f31, fcsr
_SP_FP_REGS = regs.regids("riscv64", "sp") + _FP_REGS     # rt_sigreturn's first read: sp, then the F state
# ucontext up to the mask: uc_flags, uc_link, uc_stack {ss_sp, ss_flags, pad, ss_size}, uc_sigmask
_PACK_UC = struct.Struct("<QQQIIQQ")
_END_HDR = struct.Struct("<II")
_U64 = struct.Struct("<Q")
_PACK_FP = struct.Struct("<32QI")
_PACK_FP_CUR = struct.Struct("<33Q")     # f0-f31, fcsr as read back from the CPU
_FCSR = struct.Struct("<I")
_NO_EXT = bytes(4 + CTX_HDR)            # sc_extdesc.reserved = 0, then the END header {0, 0}


def user_regs(k: "Kernel", cpu: Any) -> list[int]:
    """[pc, x1..x31, f0..f31, fcsr] of the CPU, in one libunicorn call (the CPU's cached batch)."""
    return cpu.batch_reader(_FRAME_REGS)()


def riscv_v_sc_size(vlenb: int) -> int:
    return CTX_HDR + V_STATE + 32 * vlenb


def _v_on(cpu: Any) -> bool:
    """riscv_v_vstate_query: the task's sstatus.VS is not Off."""
    return cpu.rvv is not None and cpu.vs != VS_OFF


def get_rt_frame_size(k: "Kernel", cpu: Any, cal_all: bool) -> int:
    size = SIZEOF_FRAME
    ctx = 0
    if k.config.has_v and (cal_all or _v_on(cpu)):
        ctx += riscv_v_sc_size(k.config.vlen // 8)
    if ctx:
        ctx += CTX_HDR              # the END header after the records
    return (size + ctx + 15) & ~15


def signal_minsigstksz(k: "Kernel") -> int:
    """init_rt_signal_env: AT_MINSIGSTKSZ is the frame with every record (V at this VLEN)."""
    ctx = riscv_v_sc_size(k.config.vlen // 8) + CTX_HDR if k.config.has_v else 0
    return (SIZEOF_FRAME + ctx + 15) & ~15


def _u64(x: int) -> bytes:
    return (x & (2**64 - 1)).to_bytes(8, "little")


def save_v_state(k: "Kernel", cpu: Any, task: "Task") -> tuple[bytes, str]:
    """The V record (header + state + data) and what riscv_v_vstate_save (the successor series:
    riscv_v_ucontext_save) decided."""
    vs_before = VS_NAMES[cpu.vs]
    if k.policies.effective("riscv-discard") == "optimize-restore":
        decision = vector.riscv_v_ucontext_save(k, cpu, task)
        st = task.thread.v
        data = bytes(st.datap) if st.datap is not None else bytes(32 * cpu.rvv.vlenb)
        return data, f"VS={vs_before}: riscv_v_ucontext_save: {decision}"
    decision = vector.riscv_v_vstate_save(k, cpu, task)
    st = task.thread.v
    vlenb = cpu.rvv.vlenb
    data = bytes(st.datap) if st.datap is not None else bytes(32 * vlenb)
    return data, f"VS={vs_before}: riscv_v_vstate_save {decision}"


def setup_rt_frame(k: "Kernel", cpu: Any, task: "Task", info: KSigInfo, ka: SigAction,
                   oldset: int) -> tuple | None:
    """get_sigframe + setup_rt_frame + setup_sigcontext; returns the trap-log note, None when
    the frame cannot be written (the caller forces SIGSEGV).  The frame is built in one buffer
    and copied to the user stack once; the handler's registers are set in one batch."""
    st = task.sigstate
    # pc, x1..x31, f0..f31, fcsr as 65 little-endian u64 in one libunicorn call: sc_regs and
    # the D state are these bytes as they are (no Python int a register)
    regs = cpu.batch_reader_raw(_FRAME_REGS, 8)()
    sp = _U64.unpack_from(regs, 16)[0]
    v_on = k.config.has_v and cpu.rvv is not None and cpu.vs != VS_OFF     # riscv_v_vstate_query
    if v_on:
        rec = riscv_v_sc_size(cpu.rvv.vlenb)
        size = (SIZEOF_FRAME + rec + CTX_HDR + 15) & ~15              # get_rt_frame_size
    else:
        size = (SIZEOF_FRAME + 15) & ~15
    ss_size = st.sas_ss_size
    on_stack = ss_size != 0 and st.sas_ss_sp < sp <= st.sas_ss_sp + ss_size \
        and not st.sas_ss_flags & SS_AUTODISARM                                   # on_sig_stack
    if on_stack and not (st.sas_ss_sp < sp - size <= st.sas_ss_sp + ss_size):
        return None                 # would overflow the alternate stack: an always-bad address
    top = st.sas_ss_sp + ss_size if ka.flags & SA_ONSTACK and ss_size and not on_stack else sp  # sigsp
    frame = (top - size) & ~0xF
    buf = bytearray(size)
    info.pack_into(buf, 0)
    # uc_flags, uc_link = 0; uc_stack as __save_altstack; uc_sigmask
    _PACK_UC.pack_into(buf, UC, 0, 0, st.sas_ss_sp, st.sas_ss_flags, 0, ss_size,
                       oldset & 0xFFFF_FFFF_FFFF_FFFF)
    # sc_regs (pc, x1..x31), then fstate_save's D state: f0..f31 and fcsr's 32 bits
    # (__riscv_d_ext_state's u32) — the raw read's first 516 bytes, in the frame's order
    buf[MCONTEXT:SC_FPREGS + 260] = memoryview(regs)[0:516]
    ext = SC_EXT_HDR
    note = "no V record (VS=Off)"
    if v_on:
        data, note = save_v_state(k, cpu, task)
        vs = task.thread.v
        state = ext + CTX_HDR
        datap = frame + state + V_STATE
        buf[ext:ext + 8] = RISCV_V_MAGIC.to_bytes(4, "little") + rec.to_bytes(4, "little")
        buf[state:state + V_STATE] = (_u64(vs.vstart) + _u64(vs.vl) + _u64(vs.vtype) + _u64(vs.vcsr)
                                      + _u64(cpu.rvv.vlenb) + _u64(datap))
        buf[state + V_STATE:state + V_STATE + len(data)] = data
        ext += rec
    # sc_extdesc.reserved (SC_RESERVED) and the END header {0, 0} are the buffer's zeroes
    if not copy_to_user_stack(k, cpu, task, frame, buf):
        return None
    # the handler: pc, ra = the vDSO's __vdso_rt_sigreturn (riscv ignores SA_RESTORER), sp, a0-a2
    cpu.batch_writer(_ENTRY_REGS)((ka.handler, signal_delivery.sigtramp_addr(k), frame, info.signo, frame, frame + UC))
    return (_frame_text, frame, size, note)       # the note, formatted when read (note_text)


def _frame_text(frame: int, size: int, note: str) -> str:
    return f"frame at {frame:#x} ({size} bytes); {note}"


def _sigreturn_text(frame: int, note: str) -> str:
    return f"rt_sigreturn: frame at {frame:#x} restored; {note}"


def sys_rt_sigreturn(k: "Kernel", cpu: Any, task: "Task") -> int:
    """rt_sigreturn: restore the mask, sc_regs, F/D state, the extension records and the altstack;
    anything malformed is a bad frame: SIGSEGV, as Linux's badframe path forces."""
    # sp (where the frame is) and the live F state (to see what the handler changed) in one read
    live = cpu.batch_reader_raw(_SP_FP_REGS, 8)()
    frame = _U64.unpack_from(live)[0]
    ok, why, a0 = restore_frame(k, cpu, task, frame, live)
    task.sigstate.returned += 1
    if not ok:
        signal_delivery._log_signal(k, cpu, task, f"rt_sigreturn: bad frame at {frame:#x} ({why}): SIGSEGV")
        signal_generate.force_sig_info(k, cpu, task, KSigInfo(SIGSEGV, SI_KERNEL, report={
            "signal": SIGSEGV, "signame": "SIGSEGV", "tid": task.tid,
            "why": f"rt_sigreturn: bad signal frame at {frame:#x}: {why}"}))
        return 0
    signal_delivery._log_signal(k, cpu, task, (_sigreturn_text, frame, why))
    return a0


def restore_frame(k: "Kernel", cpu: Any, task: "Task", frame: int, live: bytes) -> tuple[bool, str, int]:
    """restore_sigframe: (ok, note, the restored a0).  The frame as setup_rt_frame built it —
    sigframe, V record, END — is read in one copy; a record outside that span (a frame the
    program rearranged) is read where it is, with the same checks.  ``live``: sp, f0-f31, fcsr
    as the CPU holds them now (_SP_FP_REGS, raw)."""
    mm = task.mm
    size = SIZEOF_FRAME                                 # get_rt_frame_size(k, cpu, False), inline
    if k.config.has_v and cpu.rvv is not None and cpu.vs != VS_OFF:
        size = (size + riscv_v_sc_size(cpu.rvv.vlenb) + CTX_HDR + 15) & ~15
    try:
        raw = mm.read(frame, size)
    except MemoryFault:
        try:
            raw = mm.read(frame, SIZEOF_FRAME)
        except MemoryFault:
            return False, "frame not readable", 0
    signal_syscalls.set_current_blocked(k, task, _U64.unpack_from(raw, UC_SIGMASK)[0])
    # restore_sigcontext: sc_regs is laid out as the start of pt_regs; then fstate_restore.  The
    # scalar registers go back in one batch, straight from the frame's bytes; the F state only
    # when the handler changed it (the live f0-f31 compared with the frame's, bytes to bytes).
    cpu.batch_writer_raw(_GPR_REGS)(raw[MCONTEXT:MCONTEXT + 256])
    sp = _U64.unpack_from(raw, MCONTEXT + 16)[0]          # x2
    a0 = _U64.unpack_from(raw, MCONTEXT + 80)[0]          # x10
    fcsr = _FCSR.unpack_from(raw, SC_FPREGS + 256)[0] & 0xFF       # fcsr: frm + fflags
    if live[8:264] != raw[SC_FPREGS:SC_FPREGS + 256] or _U64.unpack_from(live, 264)[0] != fcsr:
        fp = list(_PACK_FP.unpack_from(raw, SC_FPREGS))
        fp[32] = fcsr
        now = _PACK_FP_CUR.unpack_from(live, 8)
        for i in range(33):
            if fp[i] != now[i]:
                cpu.write_regid(_FRAME_REGS[32 + i], fp[i])   # (the kernel's hot-path register write)
    if raw[SC_RESERVED:SC_EXT_HDR + CTX_HDR] == _NO_EXT:
        note = "no V record"        # reserved 0 and END first: what the record walk would say
    else:
        ok, note = _restore_ext_records(k, cpu, task, raw, frame)
        if not ok:
            return False, note, a0
    if not signal_syscalls.restore_altstack_raw(k, cpu, task, raw[UC_STACK:UC_STACK + 24], sp):
        return False, "uc_stack not readable", a0
    return True, note, a0


def _restore_ext_records(k: "Kernel", cpu: Any, task: "Task", raw: bytes, frame: int) -> tuple[bool, str]:
    """The extension records after sc_fpregs (sc_extdesc): (ok, note).  A header inside the
    frame's copy is read from it; one outside (a frame the program rearranged) from memory."""
    mm = task.mm
    if _END_HDR.unpack_from(raw, SC_RESERVED)[0]:
        return False, "sc_extdesc.reserved is not zero"
    ptr = frame + SC_EXT_HDR
    end = frame + len(raw)
    note = "no V record"
    for _ in range(16):
        try:
            magic, rsize = _END_HDR.unpack_from(raw if ptr + CTX_HDR <= end else mm.read(ptr, CTX_HDR),
                                                ptr - frame if ptr + CTX_HDR <= end else 0)
        except MemoryFault:
            return False, f"extension header at {ptr:#x} not readable"
        if magic == END_MAGIC:
            if rsize != END_HDR_SIZE:
                return False, f"END header with size {rsize}"
            return True, note
        if magic == RISCV_V_MAGIC:
            if not k.config.has_v or not _v_on(cpu) or rsize != riscv_v_sc_size(cpu.rvv.vlenb):
                return False, (f"V record of size {rsize} (expected {riscv_v_sc_size(cpu.rvv.vlenb)})"
                               if k.config.has_v and _v_on(cpu) else "V record but the task's V state is off")
            ok, note = __restore_v_state(k, cpu, task, ptr + CTX_HDR, raw, frame)
            if not ok:
                return False, note
        else:
            return False, f"unknown extension magic {magic:#x}"
        ptr += rsize
    return False, "no END header"


def __restore_v_state(k: "Kernel", cpu: Any, task: "Task", state: int, raw: bytes = b"",
                      base: int = 0) -> tuple[bool, str]:
    """Copy the record into the task's context (datap is followed wherever it points, with
    copy_from_user's checks), then riscv_v_vstate_set_restore: under each riscv-discard policy
    as that Linux version does (Clean with "treat VS_INITIAL as discard", Initial before)."""
    mm = task.mm
    vlenb = cpu.rvv.vlenb
    n = 32 * vlenb

    def read(addr: int, size: int) -> bytes:
        """copy_from_user, from the frame already copied when the span lies inside it"""
        if base <= addr and addr + size <= base + len(raw):
            return raw[addr - base:addr - base + size]
        return mm.read(addr, size)
    try:
        hdr = read(state, V_STATE)
        datap = int.from_bytes(hdr[40:48], "little")
        data = read(datap, n)
    except MemoryFault:
        return False, "V record data not readable"
    vs = task.thread.v
    vs.vstart, vs.vl, vs.vtype, vs.vcsr = (int.from_bytes(hdr[8 * i:8 * i + 8], "little") for i in range(4))
    if vs.datap is None:
        vs.datap = bytearray(32 * vlenb)
    vs.datap[:] = data
    vector.riscv_v_vstate_set_restore(k, cpu, task)
    if k.policies.effective("riscv-discard") == "optimize-restore":
        # the successor's set_restore leaves VS alone: mark Clean so the record is loaded at the
        # return to user, not clobbered as a dead Initial state (also what lets a handler swap a
        # context in at a syscall stop).  (Linux does both before its copy; same outcome here.)
        cpu.vs = VS_CLEAN
    return True, (f"V record restored (vl={vs.vl}, vtype={vs.vtype:#x}); riscv_v_vstate_set_restore: "
                  f"VS={VS_NAMES[cpu.vs]}, TIF_RISCV_V_DEFER_RESTORE set")
