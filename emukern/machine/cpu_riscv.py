"""An RV64GC hart at U-mode in Unicorn, plus emukern's RVV unit.

Unicorn 2.1.4 (QEMU 5.0) has no vector extension, so every vector instruction and every vector
CSR access raises an illegal-instruction exception.  This class catches it inside the hook and,
like a core whose vector unit sits beside the scalar pipeline, executes it on the RVV unit —
unless ``sstatus.VS`` is Off, in which case the illegal-instruction trap goes to the kernel
(that is Linux's vector first-use trap).  ``sstatus.VS`` is therefore modelled here, in Python.
The configuration instructions (vsetvli, vsetivli, vsetvl) are executed in C by the INTR hook
itself, without entering Python, while VS is on and nothing observes single instructions
(emukern.machine.rvv.native; ``EMUKERN_NATIVE_VSET=0`` turns that off).

Measured Unicorn behaviour this relies on (the tests under tests/machine/ and tests/hostile/ exercise them):
* ``UC_RISCV_REG_PRIV`` = 0 puts the hart in U-mode; ``ecall`` reaches UC_HOOK_INTR as intno 8.
* In the INTR hook the PC register is always the trapping instruction's address **+ 4**, also for
  16-bit instructions: the trapping PC is ``pc - 4``.
* ``ebreak`` does not reach the hook: emu_start fails with UC_ERR_INSN_INVALID at the ebreak.
* ``rdtime`` traps (no timer device) but ``rdcycle``/``rdinstret`` return host ticks whatever
  mcounteren says; so those CSR reads must never be translated: the scan-on-execute of
  :mod:`emukern.machine.cpu_base` makes each of them an exit when its page is first executed
  (whatever wrote the code: the ELF, mmap/mprotect, or the program itself), and the run that
  stops there completes the read from emukern's clock.  No per-address hooks: host memory stays
  proportional to the code actually executed.
"""
from __future__ import annotations

import ctypes
import functools
import re
import struct
from collections.abc import Sequence
from typing import Any

from unicorn import UC_ARCH_RISCV, UC_MODE_RISCV64
from unicorn import riscv_const as R
from unicorn.unicorn_const import UC_ERR_INSN_INVALID

from emukern.errors import IllegalInstruction, MemoryFault
from emukern.machine.clock import Clock
from emukern.machine import regs
from emukern.machine.cpu_base import Cpu, new_uc
from emukern.machine.memory import PAGE
from emukern.machine import uc_internal
from emukern.machine.uc_internal import Uc, UcError
from emukern.machine.counter import NativeCounter, RvvStruct, native_tlb_fill, riscv_state_fns
from emukern.machine.rvv.native import RvvNative
from emukern.machine.trap import (CAUSE_BREAKPOINT, CAUSE_FETCH_PAGE_FAULT, CAUSE_ILLEGAL,
                                  CAUSE_LOAD_PAGE_FAULT, CAUSE_STORE_PAGE_FAULT, CAUSE_USER_ECALL,
                                  Trap, TrapKind)

# sstatus.VS / FS encodings
VS_OFF, VS_INITIAL, VS_CLEAN, VS_DIRTY = 0, 1, 2, 3
VS_NAMES = {VS_OFF: "Off", VS_INITIAL: "Initial", VS_CLEAN: "Clean", VS_DIRTY: "Dirty"}
MSTATUS_FS_SHIFT = 13                  # sstatus.FS uses the same Off/Initial/Clean/Dirty encoding
MSTATUS_FS_INITIAL = 1 << MSTATUS_FS_SHIFT

CSR_CYCLE, CSR_TIME, CSR_INSTRET = 0xC00, 0xC01, 0xC02
_SYSTEM_BYTE = re.compile(rb"[\x73\xf3]")
_XREG = list(regs.RISCV64_X)
# ek_rvv's ``sys`` (counter.c): an ecall's PC, a7, a0..a5, read by the C hook (see
# RiscvCpu._native_ecall_entry)
_ECALL_REGS = struct.Struct("<8Q")
_ECALL_REGS_AT = RvvStruct.sys.offset
_XREG_1 = regs.RISCV64_X[1:]       # x1..x31: what a context switch saves and restores
_PC = regs.RISCV64_PC
_SCALAR_WORDS_MAX = 4096
_ZERO_F = [0] * len(regs.RISCV64_F)
_COMPILED_IN: Any = object()       # RiscvCpu._bind_state_access: counter.c's own helpers
# CSRs Unicorn's register API only answers at M-mode (RiscvCpu.reg_read/reg_write switch to it)
_PRIV_CSRS = frozenset(regs.regids(regs.RISCV64, "mstatus", "sstatus", "misa", "mvendorid", "marchid", "mimpid",
                                   "mhartid", "mepc", "mcause", "mtval", "sepc", "scause", "stval", "satp"))

ABI_NAMES = ["zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1", "a2", "a3",
             "a4", "a5", "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11",
             "t3", "t4", "t5", "t6"]


def machine_ids() -> tuple[int, int, int]:
    """mvendorid, marchid, mimpid of the hart (Unicorn's RISC-V CPU), from a fresh instance."""
    uc = Uc(UC_ARCH_RISCV, UC_MODE_RISCV64)
    return (int(uc.reg_read(R.UC_RISCV_REG_MVENDORID)), int(uc.reg_read(R.UC_RISCV_REG_MARCHID)),
            int(uc.reg_read(R.UC_RISCV_REG_MIMPID)))


def counter_csr_read(word: int) -> tuple[int, int] | None:
    """(csr, rd) if ``word`` only reads cycle/time/instret (csrrs/csrrc with x0, or the imm forms
    with uimm 0), else None."""
    if word & 0x7F != 0x73:
        return None
    funct3 = (word >> 12) & 7
    csr = word >> 20
    if csr not in (CSR_CYCLE, CSR_TIME, CSR_INSTRET) or funct3 not in (2, 3, 6, 7):
        return None
    if (word >> 15) & 0x1F:
        return None
    return csr, (word >> 7) & 0x1F


_U32 = struct.Struct("<I").unpack_from


class _XRegs:
    """The RVV unit's view of the scalar registers (through the CPU's fast register access).

    Values read are remembered until :meth:`forget` (called at the start of each batch of
    vector instructions): within a batch nothing but the unit's own :meth:`write` changes a
    scalar register, so a loop of vle/vse on the same base register reads it from Unicorn once."""

    def __init__(self, cpu: "RiscvCpu") -> None:
        self._r = cpu._read
        # write: Cpu._write's two statements inline (a vsetvli's rd is written on every trap)
        self._uc_rw, self._engine, self._rv, self._prv = cpu._uc_rw, cpu._engine, cpu._rv, cpu._prv
        self._c: dict[int, int] = {0: 0}

    def forget(self) -> None:
        c = self._c
        if len(c) > 1:
            c.clear()
            c[0] = 0

    def read(self, i: int) -> int:
        c = self._c
        v = c.get(i)
        if v is None:
            v = c[i] = self._r(_XREG[i])
        return v

    def write(self, i: int, value: int) -> None:
        if i:
            value &= 0xFFFF_FFFF_FFFF_FFFF
            self._rv.value = value
            self._uc_rw(self._engine, _XREG[i], self._prv)
            self._c[i] = value


class _VMem:
    """The RVV unit's view of memory: the current mm, with the scalar permission checks.

    The last mapping read from and the last one written to are remembered (while the mm's
    version, i.e. its layout and permissions, is unchanged), so a vector access inside one of
    them is a slice of its buffer; anything else goes through ``AddressSpace.read/write``."""

    def __init__(self, cpu: "RiscvCpu") -> None:
        self.cpu = cpu
        self._r: tuple[Any, ...] | None = None
        self._w: tuple[Any, ...] | None = None

    def _lookup(self, addr: int, size: int, need: str) -> tuple[Any, ...] | None:
        mm = self.cpu.mm
        m = mm.find(addr) if mm is not None else None
        if m is None or need not in m.perms or addr + size > m.end:
            return None
        assert mm is not None
        if need == "w" and "x" in m.perms:
            return None         # stores to code go through mm.write (scan-on-execute must know)
        return (mm, mm.version, m.start, m.end, m.start - m.offset, m.buf)

    def load(self, addr: int, size: int) -> bytes:
        mm = self.cpu.mm
        assert mm is not None
        c = self._r
        if c is None or c[0] is not mm or c[1] != mm.version or not c[2] <= addr <= c[3] - size:
            c = self._r = self._lookup(addr, size, "r")
            if c is None:
                return mm.read(addr, size, "r")
        o = addr - c[4]
        return c[5][o:o + size]

    def store(self, addr: int, data: bytes) -> None:
        mm = self.cpu.mm
        assert mm is not None
        size = len(data)
        c = self._w
        if c is None or c[0] is not mm or c[1] != mm.version or not c[2] <= addr <= c[3] - size:
            c = self._w = self._lookup(addr, size, "w")
            if c is None:
                mm.write(addr, data, "w")
                return
        o = addr - c[4]
        c[5][o:o + size] = data


class RiscvCpu(Cpu):
    arch = "riscv64"
    insn_align = 2
    scan_code = True          # cycle/instret CSR reads become exits (see the module docstring)
    decodes_per_address = False     # _code_exits only finds exit words: nothing to redo (cpu_base)
    batch_vector = True       # run consecutive vector instructions in one hook (debugger: off)

    def __init__(self, index: int, clock: Clock, *, vlen: int = 256, dlen: int | None = None,
                 has_v: bool = True) -> None:
        uc = new_uc(UC_ARCH_RISCV, UC_MODE_RISCV64, f"riscv64 CPU {index}")
        super().__init__(index, clock, uc)
        self.has_v = has_v
        self.vlen = vlen
        self.rvv: Any = None
        self._is_vector_insn: Any = None
        if has_v:
            from emukern.machine.rvv import RVVUnit, is_vector_insn
            self.rvv = RVVUnit(vlen=vlen, dlen=dlen)
            self._is_vector_insn = is_vector_insn
        # vsetvli/vsetivli/vsetvl executed in C inside the INTR hook (rvv/native.py), which
        # also needs sstatus.VS: it gets self.vs whenever Python returns to the guest
        self._vn = RvvNative(self, _PC, _XREG[0])
        self._vc = self._vn.s
        self.vs = VS_OFF                   # sstatus.VS, owned by the hardware model
        self.vector_insns = 0
        self.vector_cycles = 0
        self._xregs = _XRegs(self)
        self._fetch_map: tuple[Any, ...] | None = None
        # words seen right after a vector instruction that are not vector words (a pure
        # function of the word: is_vector_insn), so the batch peek after a lone vsetvli is a
        # set lookup
        self._scalar_words: set[int] = set()
        self._vmem = _VMem(self)
        uc.reg_write(R.UC_RISCV_REG_MSTATUS, MSTATUS_FS_INITIAL)
        uc.reg_write(R.UC_RISCV_REG_PRIV, 0)
        self._syscall_batch = self.make_batch([_XREG[17]] + _XREG[10:16])
        # the context switch's pt_regs, x1..x31 then the PC: one buffer both ways (save_context
        # reads it, load_context fills and writes it), C-level callables made once
        self._ctx_read, self._ctx_write, self._ctx_buf = self._make_ctx_batch(_XREG[1:] + [_PC])
        self._sys_fill, self._sys_get = self.make_batch_parts([R.UC_RISCV_REG_PC, _XREG[17]] + _XREG[10:16])
        self.hook_intr(self._hook_intr, fast=(CAUSE_USER_ECALL, self._syscall_exc), native=self._vn)
        self._bind_state_access()
        if self._vn.available:
            self._ecall_cb = self._native_ecall_entry()
        self._use_virtual_tlb()

    def _use_virtual_tlb(self) -> None:
        """Run on Unicorn's virtual TLB with counter.c's fill (the identity mapping, as satp's bare
        mode gives, but data entries without fetch permission, so that stores take Unicorn's
        inline fast path; the why is in ek_tlb_fill), and take faulting addresses from the
        engine, since a memory hook would send the stores down the slow path again.  Without the
        native library: the physical TLB and the hook (the same results, slower)."""
        fill = native_tlb_fill() if isinstance(self.counter, NativeCounter) else None
        if fill is None:
            return
        uc_internal.use_tlb_fill(self.uc, fill)
        self._faults_from_engine()

    def _bind_state_access(self, fns: Any = _COMPILED_IN) -> None:
        """How sstatus.FS, the M-mode CSRs and the FP context are reached: counter.c's ``ek_rv_*``
        helpers, one ctypes call each for what the Python sequences below make several (every
        context switch reads FS, writes it and zeroes or loads the f registers), or, without the
        native library (or with ``EMUKERN_NATIVE_CSR=0``), those Python sequences.  Both make
        the same libunicorn calls in the same order (tests/machine/test_riscv_native_csr.py).
        ``fns``: the helpers to use instead (a counter.RiscvStateFns, or None for the Python
        sequences), which the tests give to compare both ways on one CPU."""
        rs = riscv_state_fns(R.UC_RISCV_REG_PRIV, R.UC_RISCV_REG_MSTATUS, R.UC_RISCV_REG_FCSR,
                             regs.RISCV64_F) if fns is _COMPILED_IN else fns
        self.native_csr = rs is not None
        if rs is None:
            self._csr_call: Any = None
            self._mstatus_get: Any = self._mstatus
            self._fs_put: Any = self._fs_put_py
            self._fp_reset: Any = self._reset_fp_py
            return
        eng = self._engine          # (the Uc's handle object: switching engines updates it in place)
        # f0..f31 then fcsr: the one buffer save_fp reads into and load_fp writes from
        self._fp_slots = (ctypes.c_uint64 * 33)()
        self._csr_call = functools.partial(rs.csr, eng)
        self._mstatus_get = functools.partial(rs.csr, eng, R.UC_RISCV_REG_MSTATUS, None)
        self._fs_put = functools.partial(rs.set_fs, eng)
        self._fp_reset = functools.partial(rs.load_fp, eng, None)
        self._fp_load = functools.partial(rs.load_fp, eng, self._fp_slots)
        self._fp_save = functools.partial(rs.save_fp, eng, self._fp_slots)
        self._fp_unpack = functools.partial(struct.Struct("<33Q").unpack_from, self._fp_slots)

    # ---- the vector configuration instructions executed in C (rvv/native.py) -------------------
    @property
    def native_vset(self) -> int:
        """vsetvli/vsetivli/vsetvl instructions the C hook executed (statistics)."""
        return self._vn.handled

    def run(self, until: int) -> None:
        # the C hook's state for this run (on/off, the unit's vl/vtype, the vsetvl cost); what
        # it executed is in the unit and the statistics again when the run ends
        vn = self._vn
        vn.arm()
        try:
            super().run(until)
        finally:
            vn.sync()
            self._vc.known = 0

    # ---- registers -----------------------------------------------------------------------------
    def get_pc(self) -> int:
        return self._read(R.UC_RISCV_REG_PC)

    def set_pc(self, pc: int) -> None:
        self._write(R.UC_RISCV_REG_PC, pc)
        # a PC written from a hook leaves Unicorn's fault PCs imprecise until a block is left
        # through its exit check: the block counter does that at the next block (counter.c)
        self.counter.pc_written()

    def reg(self, i: int) -> int:
        return 0 if i == 0 else self._read(_XREG[i])

    def set_reg(self, i: int, value: int) -> None:
        if i:
            self._write(_XREG[i], value)

    def syscall_regs(self) -> list[int]:
        """[a7, a0..a5] in one call: the syscall number and its six arguments."""
        return self._syscall_batch()

    def syscall_trap(self, pc: int, word: int, regs: Sequence[int]) -> Trap:
        """An ecall from U-mode: scause 8, the registers the hook read as its sysregs."""
        return Trap(TrapKind.SYSCALL, self.arch, pc, cpu=self.index, insn=0x73, cause=CAUSE_USER_ECALL,
                    sysregs=list(regs))

    def reg_by_name(self, name: str) -> int:
        return self.reg(ABI_NAMES.index(name)) if name in ABI_NAMES else self.reg(int(name.lstrip("x")))

    def save_context(self) -> dict[str, Any]:
        """User integer context (pt_regs).  FP/vector state is saved by the kernel's arch code."""
        # (x1..x31 and the PC in one libunicorn call: per-register calls were most of a switch,
        # and a separate PC read was a second trip into the library on every switch)
        v = self._ctx_read()
        return {"x": [0, *v[:31]], "pc": v[31]}

    def load_context(self, ctx: dict[str, Any]) -> None:
        """Put a saved pt_regs back: x1..x31 and the PC in one libunicorn call (the PC as
        :meth:`set_pc` writes it, the counter told)."""
        buf = self._ctx_buf
        buf[0:31] = ctx["x"][1:32]
        buf[31] = ctx["pc"]
        self._ctx_write()
        self.counter.pc_written()

    # (f0..f31 in one libunicorn call each way: per-register calls were most of a switch)
    # (fcsr through the direct libunicorn call too: the binding's reg_write is ~15 us of Python,
    # and a switch to a task with an FP context restores it)
    # (natively: both in one ctypes call, ek_rv_save_fp/ek_rv_load_fp, see _bind_state_access)
    def save_fp(self) -> dict[str, Any]:
        if self.native_csr:
            self._fp_save()
            v = self._fp_unpack()
            return {"f": list(v[:32]), "fcsr": v[32]}
        return {"f": self.batch_reader(regs.RISCV64_F)(), "fcsr": self._read(R.UC_RISCV_REG_FCSR)}

    def load_fp(self, st: dict[str, Any]) -> None:
        if self.native_csr:
            slots = self._fp_slots
            slots[0:32] = st["f"]
            slots[32] = st["fcsr"] & 0xFFFF_FFFF_FFFF_FFFF
            self._fp_load()
            return
        self.batch_writer(regs.RISCV64_F)(st["f"])
        self._write(R.UC_RISCV_REG_FCSR, st["fcsr"])

    def reset_fp(self) -> None:
        self._fp_reset()

    def _reset_fp_py(self) -> None:
        self.batch_writer(regs.RISCV64_F)(_ZERO_F)
        self._write(R.UC_RISCV_REG_FCSR, 0)

    @property
    def fs(self) -> int:
        """sstatus.FS (Off/Initial/Clean/Dirty), as the FP unit maintains it: Unicorn's FP
        instructions set Dirty when they write an f register or fcsr, like the hardware."""
        return (self._mstatus_get() >> MSTATUS_FS_SHIFT) & 3

    @fs.setter
    def fs(self, value: int) -> None:
        # (ek_rv_set_fs, or _fs_put_py without the library: the same writes, same-value ones too)
        self._fs_put(value & 3)

    def _fs_put_py(self, value: int) -> None:
        """The FS setter's libunicorn calls from Python (ek_rv_set_fs makes the same in C)."""
        # read-modify-write in one M-mode window (each change of the hart's mode costs ~2 us
        # inside Unicorn, and every context switch sets FS).  Every switch makes these writes,
        # even of the value FS already has: Unicorn's FP dirty tracking after a return to the
        # guest depends on the hart's mode and mstatus writes (measured: leaving out a write of
        # the same FS made a later FP write mark FS Dirty where it had not, and the golden
        # records' cycles changed), so the writes are part of the recorded behaviour
        w = self._write
        w(R.UC_RISCV_REG_PRIV, 3)
        try:
            st = self._read(R.UC_RISCV_REG_MSTATUS) & ~(3 << MSTATUS_FS_SHIFT)
            w(R.UC_RISCV_REG_MSTATUS, st | (value & 3) << MSTATUS_FS_SHIFT)
        finally:
            w(R.UC_RISCV_REG_PRIV, 0)

    def _mstatus(self, value: int | None = None) -> int:
        """Read (or write) mstatus.  Unicorn's register API checks CSR privilege against the
        hart's current mode: at U-mode a read returns garbage, so the access is made at M-mode
        and the hart put back in U-mode (measured ~3 us: only context switches do this)."""
        return self._csr(R.UC_RISCV_REG_MSTATUS, value)

    def _csr(self, rid: int, value: int | None = None) -> int:
        """Read (or first write) a CSR at M-mode, then back to U-mode (see :meth:`_mstatus`)."""
        # (the direct libunicorn calls of Cpu._read/_write: the same C functions as the
        # binding's reg_read/reg_write, without its ~5 us of Python per call; natively all of
        # them in one call, ek_rv_csr)
        call = self._csr_call
        if call is not None:
            if value is None:
                return call(rid, None)
            self._rv.value = value & 0xFFFF_FFFF_FFFF_FFFF
            return call(rid, self._prv)
        w = self._write
        w(R.UC_RISCV_REG_PRIV, 3)
        try:
            if value is not None:
                w(rid, value)
            return self._read(rid)
        finally:
            w(R.UC_RISCV_REG_PRIV, 0)

    def reg_read(self, name: str) -> int:
        """:meth:`Cpu.reg_read`; a privileged CSR (mstatus, sepc, ...) read at M-mode, as
        :meth:`_mstatus` does (at U-mode Unicorn's register API returns garbage for them)."""
        rid = regs.regid(self.arch, name)
        if rid in _PRIV_CSRS:
            return self._csr(rid)
        return super().reg_read(name)

    def reg_write(self, name: str, value: int) -> None:
        """:meth:`Cpu.reg_write`; a privileged CSR written at M-mode (see :meth:`reg_read`)."""
        rid = regs.regid(self.arch, name)
        if rid in _PRIV_CSRS:
            self._csr(rid, value & 0xFFFF_FFFF_FFFF_FFFF)
            return
        super().reg_write(name, value)

    # ---- scan-on-execute: counter CSR reads (see the module docstring) -------------------------
    def _code_exits(self, page: int, data: bytes) -> list[int]:
        out = []
        # SYSTEM opcode 0x73 sits in the low 7 bits of the first byte (bit 7 is rd's low bit);
        # RVC makes 32-bit words 2-byte aligned, and one may straddle into the next page
        for hit in _SYSTEM_BYTE.finditer(data, 0, min(len(data), PAGE)):
            idx = hit.start()
            if idx % 2 or idx + 4 > len(data):
                continue
            csr_rd = counter_csr_read(int.from_bytes(data[idx: idx + 4], "little"))
            if csr_rd and csr_rd[0] != CSR_TIME:       # rdtime traps anyway
                out.append(page + idx)
        return out

    def _exit_reached(self, pc: int) -> bool:
        """A cycle/instret read: the hardware completes it with emukern's counters."""
        self._vn.sync()                 # (the cycles of natively executed vsetvli count)
        try:
            word, size = self._fetch(pc)
        except MemoryFault:
            word, size = 0, 2
        hit = counter_csr_read(word) if size == 4 else None
        if hit is None:                 # the word changed since the scan: drop the stale exit
            self._exits.discard(pc)
            self._exits_dirty = True
            self._flush_exits()
            self.uc.ctl_remove_cache(pc, pc + 4)
            return True
        csr, rd = hit
        self.counter.count += 1         # it retires; the value is read as it does
        self.set_reg(rd, self._counter_value(csr))
        self.set_pc(pc + 4)
        return True

    def _counter_value(self, csr: int) -> int:
        if csr == CSR_CYCLE:
            return self.now
        if csr == CSR_TIME:
            return self.clock.timer_count(self.now)
        return self.insns

    # ---- traps ---------------------------------------------------------------------------------
    def _fetch(self, pc: int) -> tuple[int, int]:
        mm = self.mm
        assert mm is not None
        # hot path (a vector instruction per trap): the last executable mapping fetched from,
        # valid while the mm's layout/permissions (its version) are unchanged
        c = self._fetch_map
        if c is not None and c[0] is mm and c[1] == mm.version and c[2] <= pc <= c[3]:
            w = _U32(c[5], pc - c[4])[0]       # (a third of int.from_bytes on a slice, measured)
            return (w, 4) if w & 3 == 3 else (w & 0xFFFF, 2)
        m = mm.find(pc)
        if m is not None and "x" in m.perms and m.size >= 4:
            self._fetch_map = (mm, mm.version, m.start, m.end - 4, m.start - m.offset, m.buf)
        try:
            w = int.from_bytes(mm.read(pc, 4, "x"), "little")
        except MemoryFault:
            w = int.from_bytes(mm.read(pc, 2, "x"), "little")     # a 16-bit insn ending a mapping
            if w & 3 == 3:
                mm.read(pc, 4, "x")                               # raises for the second half
        if w & 3 != 3:
            return w & 0xFFFF, 2
        return w, 4

    syscall_insn = 0x73        # ecall (the trap's insn; cpu_base._syscall_exc delivers it)

    def _native_ecall_entry(self) -> Any:
        """The C INTR hook's callback for an ecall (``ek_rvv_intr``'s ``py_ecall``), the hottest
        trap.  The C hook has already read the PC, a7 and a0..a5 into its struct (``sys``), so
        this is :meth:`Cpu._syscall_exc` without its ctypes register read, and without the
        general callback's frame and its dispatch on the exception number (hook_intr's
        ``entry``, whose other steps it repeats: the fold of what C executed, the exception
        kept for emu_start, sstatus.VS pushed back).  The same delivery to ``on_syscall`` with
        the same marks, then the same end-of-trap steps: a change to _syscall_exc or to
        hook_intr's native entry is made here too."""
        vc = self._vc
        regs_of = functools.partial(_ECALL_REGS.unpack_from, vc, _ECALL_REGS_AT)
        fold = self._vn.fold
        uc = self.uc
        keep = uc_internal.keep_hook_exception
        cs = self._cs

        def ecall_entry(_handle: int, _intno: int, packed: int | None) -> None:
            try:
                if packed is not None:
                    fold(packed)
                regs = regs_of()
                pc = regs[0] - 4            # the hook sees the PC after the (4-byte) ecall
                on_syscall = self.on_syscall
                if on_syscall is None:
                    self._deliver(self.syscall_trap(pc, 0x73, regs[1:]))
                else:
                    self.traps_seen += 1
                    c = cs.count            # the marks, as _syscall_exc computes them
                    eu = self.extra_user
                    on_syscall(self, pc, 0x73, regs[1:], c + eu + self.sys_cycles + self.idle_cycles,
                               c - self.stub_insns + eu)
                    # _trap_done, inline (scan_code is always on for RISC-V)
                    charged = self.extra_user + self.sys_cycles + self.idle_cycles
                    delta = charged - self._committed
                    if delta:
                        self._committed = charged
                        if self.running:
                            d = cs.deadline - delta
                            cs.deadline = d if d > 0 else 0
                    mm = self.mm
                    if mm is not None and mm.code_gen != self._code_gen and mm.version == self.mapped_version:
                        self._reset_code_view()
            except BaseException as exc:
                keep(uc, exc)
            vc.vs = self.vs
        vc.ecall_no = CAUSE_USER_ECALL
        cb = uc_internal.INTR_CFUNC(ecall_entry)
        vc.py_ecall = ctypes.cast(cb, ctypes.c_void_p).value
        return cb               # (kept by the CPU: a ctypes callback must outlive the hook)

    def _hook_intr(self, uc: Uc, intno: int, _ud: Any) -> None:
        if intno == CAUSE_USER_ECALL:
            self._syscall_exc()
            return
        self._uc_rr(self._engine, _PC, self._prv)      # self._read(_PC), without its frame
        epc = self._rv.value - 4         # measured: the hook sees the trapping PC + 4
        # A trap's sepc is the trapping instruction: the kernel resumes there unless it moves the
        # PC (the first-use trap re-executes the vector instruction), but the hook sees epc + 4,
        # so every delivery below sets the PC back first.  Completed instructions set epc + 4.
        if intno == CAUSE_ILLEGAL:
            # the hot case (a vector word per trap): fetched from the last executable mapping
            # fetched from, as _fetch does, without its frame
            mm = self.mm
            c = self._fetch_map
            if c is not None and c[0] is mm and c[1] == mm.version and c[2] <= epc <= c[3]:
                word = _U32(c[5], epc - c[4])[0]
                size = 4 if word & 3 == 3 else 2
            else:
                try:
                    word, size = self._fetch(epc)
                except MemoryFault:
                    self.set_pc(epc)
                    self._deliver(Trap(TrapKind.MEM_FAULT, self.arch, epc, cpu=self.index,
                                       cause=CAUSE_FETCH_PAGE_FAULT, tval=epc, addr=epc, access="x"))
                    return
            if size == 2:
                word &= 0xFFFF
            rvv = self.rvv
            if rvv is not None and size == 4 and self.vs != VS_OFF and (
                    word in rvv.fast or self._is_vector_insn(word)):
                done = self._run_vector(epc, word)      # (_try_hardware's first case, inline)
            else:
                done = self._try_hardware(epc, word, size)
            if done:
                mm = self.mm
                if mm is not None and mm.code_gen != self._code_gen:
                    self._reset_code_view()     # a vector store wrote executable memory
                return
            self.set_pc(epc)
            self._deliver(Trap(TrapKind.ILLEGAL, self.arch, epc, cpu=self.index, insn=word, insn_size=size,
                               cause=CAUSE_ILLEGAL, tval=word))
            return
        # anything else QEMU raises in U-mode (misaligned access, ...) becomes its own trap
        self.set_pc(epc)
        self._deliver(Trap(TrapKind.ILLEGAL, self.arch, epc, cpu=self.index, cause=intno,
                           detail=f"unexpected exception {intno}"))

    def _try_hardware(self, epc: int, word: int, size: int) -> bool:
        """Things the modelled hardware executes itself: vector instructions (VS on) and the
        counter CSR reads.  Returns True when the instruction completed."""
        rvv = self.rvv
        # vector words first: they are the hot case (a counter CSR read is never one)
        if rvv is not None and size == 4 and (word in rvv.fast or self._is_vector_insn(word)):
            if self.vs == VS_OFF:
                return False      # the kernel sees an illegal-instruction trap (first use)
            return self._run_vector(epc, word)
        if size == 4:
            hit = counter_csr_read(word)
            if hit is not None:
                self.set_reg(hit[1], self._counter_value(hit[0]))
                self.set_pc(epc + 4)
                return True
        return False

    def _run_vector(self, epc: int, word: int) -> bool:
        """Execute the vector instruction at ``epc`` and the vector instructions that follow it
        (a batch), on the RVV unit; VS is known to be on."""
        rvv = self.rvv
        fast = rvv.fast           # the unit's specialised executors: execute() without its frame
        xregs, vmem = self._xregs, self._vmem
        c = xregs._c              # xregs.forget(), inline: the kernel or the debugger may
        if len(c) > 1:            # have written x since the last batch
            c.clear()
            c[0] = 0
        # the first instruction: the counter hook has already counted it (and charged its one
        # cycle); a trap leaves before anything else changed
        try:
            f = fast.get(word)
            res = rvv.execute(word, xregs, vmem) if f is None else f(xregs, vmem)
        except (IllegalInstruction, MemoryFault) as exc:
            self._vector_trap(epc, word, exc)
            return True           # a trap was delivered; the kernel has set the PC
        cycles = res.cycles
        dirty = res.dirty
        extra = self.extra_user + cycles - 1         # the counter already charged one cycle
        pc = epc + 4
        # Is the next word a vector one too (the batch below)?  Most traps are one vector
        # instruction among scalar code (a vsetvli before a loop, a syscall loop's vsetvli):
        # those end here, with nothing kept in locals.
        # (VS cannot have been turned off: only the kernel does that, between traps)
        nxt = None
        if self.batch_vector:
            mm = self.mm
            fm = self._fetch_map
            if fm is not None and fm[0] is mm and fm[1] == mm.version and fm[2] <= pc <= fm[3]:
                nxt = _U32(fm[5], pc - fm[4])[0]
            else:
                try:
                    nxt, size = self._fetch(pc)
                except MemoryFault:
                    size = 0
                if size != 4:
                    nxt = None
            if nxt is not None and nxt not in fast:
                scalar = self._scalar_words
                if nxt in scalar:
                    nxt = None
                elif nxt & 3 != 3 or not self._is_vector_insn(nxt):
                    if len(scalar) >= _SCALAR_WORDS_MAX:
                        scalar.clear()
                    scalar.add(nxt)
                    nxt = None
        if nxt is None:
            self.extra_user = extra
            self.vector_insns += 1
            self.vector_cycles += cycles
            if dirty:
                self.vs = VS_DIRTY
            if extra + self.sys_cycles + self.idle_cycles != self._committed:
                self.commit_charges()
            # Unicorn's PC is already epc + 4 (the hook sees the trapping PC + 4)
            return True
        return self._run_vector_batch(epc, pc, nxt, cycles, dirty, extra)

    def _run_vector_batch(self, epc: int, pc: int, word: int, cycles: int, dirty: bool,
                          extra: int) -> bool:
        """The rest of a batch: the vector instruction at ``epc`` has run (``cycles``,
        ``dirty``, ``extra`` = extra_user with its cycles), ``word`` at ``pc`` is a vector word."""
        cs = self._cs             # the live counter (ctypes struct or the Python counter)
        rvv = self.rvv
        fast = rvv.fast
        execute = rvv.execute
        is_vec = self._is_vector_insn
        xregs, vmem = self._xregs, self._vmem
        # Nothing outside this loop runs until it ends (a trap leaves it first), so the counter,
        # the charged cycles and the statistics live in locals and are stored once at the end.
        count = cs.count
        # the deadline less the charged cycles not yet committed to it, without extra_user's
        # part (which grows in the loop): stop when count >= limit - extra
        limit = cs.deadline - (self.sys_cycles + self.idle_cycles - self._committed)
        n = 1
        mm = self.mm
        fm = self._fetch_map
        if fm is not None and (fm[0] is not mm or fm[1] != mm.version):
            fm = None
        # A run of vector instructions is executed in this one hook call instead of one trap
        # each (the trap round trip costs more than most vector instructions).  The counter
        # hook would have counted each of them, so count them here, and stop at the deadline
        # — less the extra cycles charged but not yet committed to it — so a tick or a
        # debugger step still lands on the exact instruction.
        while count < limit - extra:
            count += 1
            # one vector instruction, executed inline (this loop is the RVV hot path, and each
            # Python frame costs a tenth of an m1 instruction's time); the unit reads x lazily
            try:
                f = fast.get(word)
                res = execute(word, xregs, vmem) if f is None else f(xregs, vmem)
            except (IllegalInstruction, MemoryFault) as exc:
                self._vector_done(cs, count, extra, n, cycles, dirty)
                self._vector_trap(pc, word, exc)
                return True       # a trap was delivered; the kernel has set the PC
            n += 1
            cyc = res.cycles
            cycles += cyc
            if res.dirty:
                dirty = True
            extra += cyc - 1                         # the counter already charged one cycle
            pc += 4
            # the next word: from the executable mapping fetched from last (as _fetch does)
            if fm is not None and fm[2] <= pc <= fm[3]:
                word = _U32(fm[5], pc - fm[4])[0]
            else:
                try:
                    word, size = self._fetch(pc)
                except MemoryFault:
                    break
                if size != 4:
                    break
                fm = self._fetch_map
            if word not in fast and (word & 3 != 3 or not is_vec(word)):
                break
        self._vector_done(cs, count, extra, n, cycles, dirty)
        self.commit_charges()
        if pc != epc + 4:
            # Unicorn's PC is already epc + 4: only a batch of more than one instruction moves
            # it (and pays for the PC write's resync)
            self.set_pc(pc)       # the first instruction after the run
        return True

    def _vector_done(self, cs: Any, count: int, extra: int, n: int, cycles: int,
                     dirty: bool) -> None:
        """Store what a vector batch kept in locals: the counter, the charged cycles, VS."""
        cs.count = count
        self.extra_user = extra
        self.vector_insns += n
        self.vector_cycles += cycles
        if dirty:
            self.vs = VS_DIRTY

    def _vector_trap(self, pc: int, word: int, exc: Exception) -> None:
        """A vector instruction at ``pc`` raised: deliver its illegal-instruction or fault trap."""
        if isinstance(exc, IllegalInstruction):
            self.set_pc(pc)
            self._deliver(Trap(TrapKind.ILLEGAL, self.arch, pc, cpu=self.index, insn=word,
                               cause=CAUSE_ILLEGAL, tval=word, detail=exc.reason))
            return
        assert isinstance(exc, MemoryFault)
        self.vs = VS_DIRTY    # vstart (and any elements already moved) changed
        cause = CAUSE_STORE_PAGE_FAULT if exc.access == "w" else CAUSE_LOAD_PAGE_FAULT
        self.set_pc(pc)
        self._deliver(Trap(TrapKind.MEM_FAULT, self.arch, pc, cpu=self.index, insn=word,
                           cause=cause, tval=exc.addr, addr=exc.addr, access=exc.access,
                           detail="vector access"))

    def _trap_from_error(self, exc: UcError) -> Trap:
        self._vn.sync()                 # the kernel sees this trap (its V state) next
        pc = self.get_pc()
        if self._fault is not None:
            addr, access = self._fault
            cause = {"r": CAUSE_LOAD_PAGE_FAULT, "w": CAUSE_STORE_PAGE_FAULT}.get(access, CAUSE_FETCH_PAGE_FAULT)
            return Trap(TrapKind.MEM_FAULT, self.arch, pc, cpu=self.index, cause=cause, tval=addr,
                        addr=addr, access=access)
        word, size = None, 4
        try:
            word, size = self._fetch(pc)
        except MemoryFault:
            return Trap(TrapKind.MEM_FAULT, self.arch, pc, cpu=self.index, cause=CAUSE_FETCH_PAGE_FAULT,
                        tval=pc, addr=pc, access="x")
        if exc.errno == UC_ERR_INSN_INVALID and word in (0x00100073, 0x9002):
            return Trap(TrapKind.BREAKPOINT, self.arch, pc, cpu=self.index, insn=word, insn_size=size,
                        cause=CAUSE_BREAKPOINT, tval=pc)
        return Trap(TrapKind.ILLEGAL, self.arch, pc, cpu=self.index, insn=word, insn_size=size,
                    cause=CAUSE_ILLEGAL, tval=word, detail=str(exc))

    # ---- the vector state, for tests and tools ---------------------------------------------------
    # What the hart holds right now: after a run, or from a debugger hook.  These are the vector
    # unit's own registers (:class:`~emukern.machine.rvv.unit.RVVUnit`); a task that is switched
    # out has its V state in the kernel's save area instead, as in Linux.
    def _vector_unit(self) -> Any:
        """The V unit, with what the native vsetvl path executed folded in (vl/vtype current)."""
        if self.rvv is None:
            raise ValueError("this hart has no V extension (the machine was built with has_v=False)")
        self._vn.sync()
        return self.rvv

    def vreg(self, n: int) -> bytes:
        """Vector register ``v<n>`` (0-31): ``vlenb`` bytes, element 0 first (little-endian).

        Element ``i`` of width SEW bits is ``vreg(n)[i*SEW//8:(i+1)*SEW//8]``, whatever vtype says.
        A register group (LMUL > 1) is ``vreg(n) + vreg(n+1) + ...``."""
        return self._vector_unit().read_vreg(n)

    def set_vreg(self, n: int, data: bytes) -> None:
        """Write ``v<n>``: ``data`` is ``vlenb`` bytes (a multiple fills ``v<n+1>``... as a
        group).  Like a debugger's write, it does not change sstatus.VS."""
        self._vector_unit().write_vreg(n, bytes(data))

    @property
    def vl(self) -> int:
        """The ``vl`` CSR: the element count the last vset{i}vl{i} granted."""
        return int(self._vector_unit().vl)

    @property
    def vtype(self) -> int:
        """The ``vtype`` CSR (raw XLEN bits; bit 63 set is vill, an invalid configuration)."""
        return int(self._vector_unit().vtype)

    @property
    def vstart(self) -> int:
        """The ``vstart`` CSR: the element a trapped vector load/store resumes at (0 normally)."""
        return int(self._vector_unit().vstart)

    @property
    def vlenb(self) -> int:
        """The ``vlenb`` CSR: VLEN in bytes (the length of :meth:`vreg`)."""
        return int(self._vector_unit().vlenb)
