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
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from unicorn import riscv_const as UR

from emukern.errors import MemoryFault
from emukern.kernel import signal as S
from emukern.kernel.riscv import vector
from emukern.machine.cpu_riscv import VS_NAMES, VS_OFF

if TYPE_CHECKING:
    from emukern.kernel.kernel import Kernel
    from emukern.kernel.task import Task

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
_FRAME_REGS = ([UR.UC_RISCV_REG_PC] + [UR.UC_RISCV_REG_X0 + i for i in range(1, 32)]
               + [UR.UC_RISCV_REG_F0 + i for i in range(32)] + [UR.UC_RISCV_REG_FCSR])
_PACK_REGS = struct.Struct("<32Q")
_PACK_FP = struct.Struct("<32QI")


def user_regs(k: "Kernel", cpu: Any) -> list[int]:
    """[pc, x1..x31, f0..f31, fcsr] of the CPU (a cached batch reader per CPU)."""
    readers = k.__dict__.setdefault("_rv_sig_batch", {})
    rd = readers.get(cpu.index)
    if rd is None:
        rd = readers[cpu.index] = cpu.make_batch(_FRAME_REGS)
    return rd()


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
    """The V record (header + state + data) and what riscv_v_vstate_save decided."""
    vs_before = VS_NAMES[cpu.vs]
    decision = vector.riscv_v_vstate_save(k, cpu, task)
    st = task.thread.v
    vlenb = cpu.rvv.vlenb
    data = bytes(st.datap) if st.datap is not None else bytes(32 * vlenb)
    return data, f"VS={vs_before}: riscv_v_vstate_save {decision}"


def setup_rt_frame(k: "Kernel", cpu: Any, task: "Task", info: S.KSigInfo, ka: S.SigAction,
                   oldset: int) -> str | None:
    """get_sigframe + setup_rt_frame + setup_sigcontext; returns the trap-log note, None when
    the frame cannot be written (the caller forces SIGSEGV)."""
    st = task.sigstate
    regs = user_regs(k, cpu)
    sp = regs[2]
    v_on = k.config.has_v and _v_on(cpu)
    size = get_rt_frame_size(k, cpu, False)
    if S.on_sig_stack(st, sp) and not S.on_sig_stack(st, sp - size):
        return None                 # would overflow the alternate stack: an always-bad address
    frame = (S.sigsp(st, sp, ka) - size) & ~0xF
    buf = bytearray(size)
    buf[0:128] = info.to_bytes()
    buf[UC_STACK:UC_STACK + 24] = k.save_altstack(task, sp)
    buf[UC_SIGMASK:UC_SIGMASK + 8] = _u64(oldset)
    _PACK_REGS.pack_into(buf, MCONTEXT, *regs[0:32])          # sc_regs: pc, x1..x31
    # fstate_save: the live F/D registers and fcsr
    _PACK_FP.pack_into(buf, SC_FPREGS, *regs[32:64], regs[64] & 0xFFFFFFFF)
    ext = SC_EXT_HDR
    note = "no V record (VS=Off)"
    if v_on:
        data, note = save_v_state(k, cpu, task)
        vs = task.thread.v
        rec = riscv_v_sc_size(cpu.rvv.vlenb)
        state = ext + CTX_HDR
        datap = frame + state + V_STATE
        buf[ext:ext + 8] = RISCV_V_MAGIC.to_bytes(4, "little") + rec.to_bytes(4, "little")
        buf[state:state + V_STATE] = (_u64(vs.vstart) + _u64(vs.vl) + _u64(vs.vtype) + _u64(vs.vcsr)
                                      + _u64(cpu.rvv.vlenb) + _u64(datap))
        buf[state + V_STATE:state + V_STATE + len(data)] = data
        ext += rec
    buf[SC_RESERVED:SC_RESERVED + 4] = bytes(4)
    buf[ext:ext + 8] = END_MAGIC.to_bytes(4, "little") + END_HDR_SIZE.to_bytes(4, "little")
    if not _write_user(k, cpu, task, frame, bytes(buf)):
        return None
    # the handler: pc, sp, a0-a2, ra = the vDSO's __vdso_rt_sigreturn (riscv ignores SA_RESTORER)
    cpu.set_pc(ka.handler)
    cpu.set_reg(2, frame)
    cpu.set_reg(10, info.signo)
    cpu.set_reg(11, frame)
    cpu.set_reg(12, frame + UC)
    cpu.set_reg(1, k.sigtramp_addr)
    return f"frame at {frame:#x} ({size} bytes); {note}"


def _write_user(k: "Kernel", cpu: Any, task: "Task", addr: int, data: bytes) -> bool:
    """copy_to_user onto the user stack, growing it as a fault on it would."""
    if addr < 0 or addr + len(data) > 2**64:
        return False
    try:
        task.mm.write(addr, data)
        return True
    except MemoryFault:
        pass
    if not k.expand_stack(task, addr):
        return False
    cpu.sync_mm()
    try:
        task.mm.write(addr, data)
        return True
    except MemoryFault:
        return False


def sys_rt_sigreturn(k: "Kernel", cpu: Any, task: "Task") -> int:
    """rt_sigreturn: restore the mask, sc_regs, F/D state, the extension records and the altstack;
    anything malformed is a bad frame: SIGSEGV, as Linux's badframe path forces."""
    frame = cpu.reg(2)
    ok, why = restore_frame(k, cpu, task, frame)
    task.sigstate.returned += 1
    if not ok:
        k._log_signal(cpu, task, f"rt_sigreturn: bad frame at {frame:#x} ({why}): SIGSEGV")
        k.force_sig_info(cpu, task, S.KSigInfo(S.SIGSEGV, S.SI_KERNEL, report={
            "signal": S.SIGSEGV, "signame": "SIGSEGV", "tid": task.tid,
            "why": f"rt_sigreturn: bad signal frame at {frame:#x}: {why}"}))
        return 0
    k._log_signal(cpu, task, f"rt_sigreturn: frame at {frame:#x} restored; {why}")
    return cpu.reg(10)


def restore_frame(k: "Kernel", cpu: Any, task: "Task", frame: int) -> tuple[bool, str]:
    mm = task.mm
    try:
        raw = mm.read(frame, SIZEOF_FRAME)
    except MemoryFault:
        return False, "frame not readable"
    k.set_current_blocked(task, int.from_bytes(raw[UC_SIGMASK:UC_SIGMASK + 8], "little"))
    # restore_sigcontext: sc_regs is laid out as the start of pt_regs; then fstate_restore
    new = list(_PACK_REGS.unpack_from(raw, MCONTEXT)) + list(_PACK_FP.unpack_from(raw, SC_FPREGS))
    new[64] &= 0xFF                 # fcsr: frm + fflags
    cur = user_regs(k, cpu)
    for i, (a, b) in enumerate(zip(new, cur)):
        if a != b:
            cpu.write_regid(_FRAME_REGS[i], a)  # (the kernel's hot-path register write)
    if int.from_bytes(raw[SC_RESERVED:SC_RESERVED + 4], "little"):
        return False, "sc_extdesc.reserved is not zero"
    ptr = frame + SC_EXT_HDR
    note = "no V record"
    for _ in range(16):
        try:
            hdr = mm.read(ptr, CTX_HDR)
        except MemoryFault:
            return False, f"extension header at {ptr:#x} not readable"
        magic, size = int.from_bytes(hdr[:4], "little"), int.from_bytes(hdr[4:], "little")
        if magic == END_MAGIC:
            if size != END_HDR_SIZE:
                return False, f"END header with size {size}"
            break
        if magic == RISCV_V_MAGIC:
            if not k.config.has_v or not _v_on(cpu) or size != riscv_v_sc_size(cpu.rvv.vlenb):
                return False, (f"V record of size {size} (expected {riscv_v_sc_size(cpu.rvv.vlenb)})"
                               if k.config.has_v and _v_on(cpu) else "V record but the task's V state is off")
            ok, note = __restore_v_state(k, cpu, task, ptr + CTX_HDR)
            if not ok:
                return False, note
        else:
            return False, f"unknown extension magic {magic:#x}"
        ptr += size
    else:
        return False, "no END header"
    if not k.restore_altstack(cpu, task, frame + UC_STACK, cpu.reg(2)):
        return False, "uc_stack not readable"
    return True, note


def __restore_v_state(k: "Kernel", cpu: Any, task: "Task", state: int) -> tuple[bool, str]:
    """Copy the record into the task's context (datap is followed wherever it points, with
    copy_from_user's checks), then riscv_v_vstate_set_restore: under each riscv-discard policy
    as that Linux version does (Clean with "treat VS_INITIAL as discard", Initial before)."""
    mm = task.mm
    vlenb = cpu.rvv.vlenb
    try:
        raw = mm.read(state, V_STATE)
        datap = int.from_bytes(raw[40:48], "little")
        data = mm.read(datap, 32 * vlenb)
    except MemoryFault:
        return False, "V record data not readable"
    vs = task.thread.v
    vs.vstart, vs.vl, vs.vtype, vs.vcsr = (int.from_bytes(raw[8 * i:8 * i + 8], "little") for i in range(4))
    if vs.datap is None:
        vs.datap = bytearray(32 * vlenb)
    vs.datap[:] = data
    vector.riscv_v_vstate_set_restore(k, cpu, task)
    return True, (f"V record restored (vl={vs.vl}, vtype={vs.vtype:#x}); riscv_v_vstate_set_restore: "
                  f"VS={VS_NAMES[cpu.vs]}, TIF_RISCV_V_DEFER_RESTORE set")
