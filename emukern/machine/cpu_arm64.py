"""An AArch64 ``max`` CPU running at EL0 in Unicorn.

Measured Unicorn behaviour this relies on (the tests under tests/machine/ and tests/hostile/ exercise them):
* Writing PSTATE does not change the exception level; EL0 is reached with a real ``eret`` from
  EL1 (SPSR_EL1 = 0, ELR_EL1 = entry), executed from a small machine-owned stub page.
* SVE needs the ``max`` model, CPTR_EL3.EZ and CPACR_EL1.ZEN; VL = min over ZCR_EL1/2/3 LEN.
* At EL0, with the hooks installed: ``svc`` is intno 2 with the PC already past it; an undefined
  instruction — including an SVE instruction while ZEN traps EL0 and an ``mrs`` of an ID register
  (no FEAT_IDST in QEMU 5.0) — is intno 1 with the PC at the instruction; ``brk`` is intno 7.
* ESR_EL1 is not written when a hook catches the exception, so the syndrome (EC/ISS) is worked
  out here from the instruction word and the trap controls, as the hardware would.
* With CNTKCTL_EL1 = 0, an EL0 read of CNTVCT_EL0/CNTFRQ_EL0 raises UDEF (intno 1); emukern
  completes it there with its own clock, so a guest timing itself is deterministic.  (A
  ``UC_HOOK_INSN`` MRS hook would also work, but it fires on every MRS — including every trapping
  ID-register read — and costs a Python call each.)
* Pointer authentication: PAC*/AUT* are NOPs until SCTLR_EL1.EnIA/EnIB/EnDA/EnDB are set; then they
  UDEF unless SCR_EL3.API/APK and HCR_EL2.API/APK are set, and HCR_EL2 only counts in non-secure
  state (see :meth:`Arm64Cpu.enable_pointer_auth`).  A failed AUT* puts an error code in the
  pointer (no FPAC); the branch or access through it faults.
* Only V0-V31 (the low 128 bits of Z) are visible through the Unicorn API.  Z bits above 128, P0-P15
  and FFR are reached with real SVE instructions: the kernel's SVE/FPSIMD save, load and flush
  sequences run as *stubs* on the CPU (see "Kernel sequences" below), so their cost is counted by
  the instruction counter.  An AdvSIMD write of V (``mov v0.16b, v0.16b``, ``ldp q``) zeroes the
  Z bits above 128 up to the current VL when EL0 may use SVE (tests/machine/test_sve_stub.py).

The SVE2 unit (machine/sve2/)
-----------------------------
Unicorn 2.1.4 executes no SVE2.  An EL0 UNDEF whose word is in the SVE encoding space, with SVE
enabled at EL0, goes to the SVE2 unit first (:meth:`_sve2_execute`): if the word is an instruction
it implements and this CPU's ID registers advertise (``cpu_model`` / ``sve_idregs``), the PC is
sent into the machine's own transfer microcode (``SVE2_MICROCODE``, in the guarded stub page;
data through the bounce buffer), whose closing ``brk``s come back to :meth:`_hook_intr`; the
instruction runs in Python between SAVE and LOAD and retires as one instruction.  With SVE off at
EL0 the word is an SVE access trap as before (:meth:`classify_undef`); not advertised, it is UNDEF.

Kernel sequences ("stubs") (design)
-----------------------------------
The machine knows no kernel code: the kernel loads its instruction sequences (arm64's
entry-fpsimd.S save/load/flush, :mod:`emukern.kernel.arch.arm64.entry_fpsimd`) into the kernel text of
the machine-owned stub page with :meth:`Arm64Cpu.install_kernel_text`, each named with its length
and whether it loads or saves through the bounce buffer (:class:`KernelSeq`).  Each ends in
``brk #0xe4e`` (the ``ret``).  A loading or saving sequence works on this CPU's *bounce buffer* at
``BOUNCE_BASE``: the kernel buffer passed with it is copied in before a load and out after a save.

Machine pages (issue: EL0 must not reach them)
----------------------------------------------
The stubs run at EL0 like the guest (Unicorn never takes an exception to EL1), so Unicorn's own
page permissions are the only protection and they have to tell stub time from user time:

* the stub page is mapped **execute-only**: no EL0 store can patch it, and a user load faults.
  Unicorn checks permissions when it fills a TLB entry; on its default (physical) TLB a stub's
  instruction fetch fills one that would let data accesses through, which took a TLB flush
  whenever stubs ended (~1-2 us a syscall of a TIF_SVE task).  This CPU runs on Unicorn's
  *virtual* TLB with native/a64_stub.c's fill hook: the identity mapping with every permission
  (what the physical TLB gives with the MMU off; the regions' permissions are checked on a fill
  as there), except in the stub page, where an entry gets only the permission of the access that
  filled it: a stub's fetch leaves an execute-only entry, a user load misses it and is checked
  against the mapping (SIGSEGV) -- tests/machine/test_stub_native_return.py and
  tests/hostile/test_machine_pages.py.  (Without the hook every page would be filled per access
  type: a page both read and written refilled at each switch, measured 4x slower.)  Without the
  native library the CPU stays on the physical TLB and flushes;
* a guard in the instruction counter's hook (:class:`~emukern.machine.counter.CodeGuard`: one
  compare per instruction; a separate code hook even limited to the stub range halved the speed
  of a hot loop) stops the CPU before the first instruction there unless a stub is running:
  user code branching into it gets an instruction abort (SIGSEGV);
* the bounce buffer is no-access except while a save/load stub runs (``mem_protect`` around
  it; flush stubs, the per-syscall case, do not open it);
* every stub is bounded by its known length through the instruction counter's deadline: one that
  does not reach its closing ``brk`` raises :class:`StubOverrun` (an emulator error), never a hang.

Measured cost (sve_sysloop: 20,000 getpid with SVE live, one sve_flush_live stub each): about
3.5 us per stub run, the TLB flush; a ``mem_protect`` that toggled execute permission on the stub
page instead cost ~30 us per syscall (Unicorn drops the page's translated blocks).  Raw Unicorn
(issue 19, ctypes hooks, C return): 3.4 us a flush with the TLB flush, 1.6 us on the virtual TLB.

The syscall flush's hot path (issue 19): a lone argument-less sequence that writes only SIMD/SVE
registers (checked at install) is armed by the trap hook and entered and left in C
(native/a64_stub.c: an INTR hook after this CPU's, and a code hook on the sequence's closing brk),
within the same emu_start and without a second Python callback (see :meth:`_chain_begin`).  From
the INTR hook that includes the SVE access trap's flush, queued while ZEN still traps EL0 SVE: the
hook writes ZEN and the VL first, as the chain would leave them after the flush.

The svc entry (issue 30): with native/a64_stub.c available, this CPU's INTR hook is its C
``ek_a64_intr`` (in the Python callback's place, so ek_a64_stub_enter still runs after it), which
reads an svc's PC, x8 and x0..x5 and calls one Python callback (:meth:`_svc_entry`) -- as
riscv64's ecall goes through counter.c's ek_rvv_intr.  Other exceptions go to :meth:`_hook_intr`.

The kernel *queues* stub work (:meth:`Arm64Cpu.queue_stub`) in program order; the queue runs on
the CPU before any user instruction and before any Python access to the FP registers:

* in a trap hook (the common case: a syscall's ``sve_flush_live``): when the kernel returns from
  the trap and the CPU keeps running, the hook saves x0-x3 and the user PC, points the PC at the
  first stub and returns; each stub's ``brk #0xe4e`` comes back to the INTR hook, which starts the
  next stub or restores x0-x3 and the PC (about 1 µs per stub, no nested ``emu_start``);
* otherwise (the CPU was stopped: context switch, exec, tick) the queue is drained at the start
  of :meth:`run`: the queue of a switch -- FPSIMD saves and loads and at most one flush (the
  syscall flush of a task that blocked, the ``sve_flush_p`` after a TIF_SVE task's load) -- with
  no run of its own: the saves and loads through the register file, the flush entered first by
  the user's own ``emu_start`` and left by the C return (which also writes CPACR_EL1 back when
  EL0 SVE is to trap), see :meth:`Arm64Cpu._restart_plan`; any other queue by a direct
  ``emu_start`` per stub (:meth:`stub_sync`);
* :meth:`stub_sync` inside a hook (a Python read of the registers, e.g. fork copying the parent's
  FP state) drains with a nested ``emu_start`` — correct, ~30 µs, rare.

One sequence is performed without running it: ``fpsimd_load_state`` (a :class:`KernelSeq` marked
``regfile_load``, checked word by word against :data:`FPSIMD_LOAD_WORDS` at install).  While the
Z bits above 128 are known to be zero -- no EL0 SVE access granted and no other sequence run on
this CPU since it was created, or since a sequence that zeroes them (:func:`zhi_effect`, found by
its words: ``sve_flush_live``, the FPSIMD load itself) ran with no EL0 instruction able to use SVE
after it, or before a queued flush that zeroes them -- its only effect is V0-V31, FPSR and
FPCR, written in one batch;
its instructions are counted as retired kernel instructions exactly as a run counts them (the
clock, ``stub_insns`` and ``stub_stats`` are the same; tests/machine/test_stub_regfile.py compares
the two on twin CPUs).  That saves the bounce buffer's two ``mem_protect`` calls (~14 us) and the
stub chain on the FPSIMD load after every rt_sigreturn and lazy FP restore of a non-SVE task.

While stubs run, the counter's deadline is the stub's length (a stub is never cut by a tick), CPACR_EL1.ZEN
is forced to 11 and ZCR_EL1 is the VL the kernel had programmed when it queued that stub; changes
the kernel makes to ZEN/VL while stubs are queued take effect after them, in order.  Every stub
instruction (including the final ``brk``) is counted in ``stub_insns`` (system time) and per stub
in ``stub_stats``.
"""
from __future__ import annotations

import ctypes
import functools
import os
import mmap
import struct
from collections import Counter
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Mapping, Sequence

from unicorn import (UC_ARCH_ARM64, UC_HOOK_CODE, UC_HOOK_INTR, UC_MODE_ARM, UC_PROT_EXEC, UC_PROT_NONE,
                     UC_PROT_READ, UC_PROT_WRITE)
from unicorn import arm64_const as A
from unicorn.unicorn_const import UC_ERR_FETCH_PROT

from emukern.errors import MemoryFault
from emukern.machine.a64_atomics import Atomic, alignment_esr, find_atomic_words, perform, unicorn_performs_right
from emukern.machine.a64_unallocated import find_aborting_words
from emukern.machine.clock import Clock
from emukern.machine.counter import CodeGuard, NativeCounter, _CounterStruct
from emukern.machine.cpu_base import UNTIL_NEVER, Cpu, new_uc
from emukern.machine.memory import PAGE
from emukern.machine import regs, uc_internal
from emukern.machine.uc_internal import Uc, UcError
from emukern.machine.trap import (ESR_EC_BRK64, ESR_EC_DABT_LOW, ESR_EC_IABT_LOW, ESR_EC_SVC64,
                                  ESR_EC_SOFTSTP_LOW, ESR_EC_SVE, ESR_EC_SYS64, ESR_EC_UNKNOWN, Trap,
                                  TrapKind)

# the UNDEF path builds its Trap positionally (_hook_intr): the fields' order it relies on
assert [f.name for f in fields(Trap)][:9] == ["kind", "arch", "pc", "cpu", "insn", "insn_size", "cause", "tval",
                                              "esr"], "Trap's field order changed: update Arm64Cpu._hook_intr"

STUB_BASE = 0x3F_FFFF_0000      # machine-owned page: the eret that enters EL0, kernel stubs
STUB_SIZE = 0x10000
ESR_IL = 1 << 25

_X = list(regs.ARM64_X)           # x0..x30
_Q = list(regs.ARM64_Q)           # q0..q31
# the registers a queued kernel stub may write (reg_read/reg_write run the queue first)
_FP_IDS = frozenset(regs.ARM64_REGS[f"{k}{i}"] for k in "vqds" for i in range(32)) | {
    regs.ARM64_REGS["fpsr"], regs.ARM64_REGS["fpcr"]}

# system registers as (op0, op1, crn, crm, op2)
CPACR_EL1 = (3, 0, 1, 0, 2)
CPTR_EL3 = (3, 6, 1, 1, 2)
ZCR_EL1 = (3, 0, 1, 2, 0)
ZCR_EL2 = (3, 4, 1, 2, 0)
ZCR_EL3 = (3, 6, 1, 2, 0)
CNTKCTL_EL1 = (3, 0, 14, 1, 0)
SPSR_EL1 = (3, 0, 4, 0, 0)
ELR_EL1 = (3, 0, 4, 0, 1)
CNTVCT_EL0 = (3, 3, 14, 0, 2)
CNTFRQ_EL0 = (3, 3, 14, 0, 0)
CNTPCT_EL0 = (3, 3, 14, 0, 1)
SCTLR_EL1 = (3, 0, 1, 0, 0)
# pointer authentication (FEAT_PAuth): the traps that must be off above EL1, the translation
# control that places the PAC field, and the five 128-bit keys as (lo, hi) register pairs in
# struct ptrauth_keys_user's order: APIA, APIB, APDA, APDB, APGA
SCR_EL3 = (3, 6, 1, 1, 0)
HCR_EL2 = (3, 4, 1, 1, 0)
TCR_EL1 = (3, 0, 2, 0, 2)
PAUTH_KEY_REGS = (((3, 0, 2, 1, 0), (3, 0, 2, 1, 1)), ((3, 0, 2, 1, 2), (3, 0, 2, 1, 3)),
                  ((3, 0, 2, 2, 0), (3, 0, 2, 2, 1)), ((3, 0, 2, 2, 2), (3, 0, 2, 2, 3)),
                  ((3, 0, 2, 3, 0), (3, 0, 2, 3, 1)))
SCR_NS, SCR_RW, SCR_APK, SCR_API = 1 << 0, 1 << 10, 1 << 16, 1 << 17
HCR_RW, HCR_APK, HCR_API = 1 << 31, 1 << 40, 1 << 41
TCR_T0SZ_48, TCR_TBI0 = 16, 1 << 37
# SCTLR_EL1.EnIA/EnIB/EnDA/EnDB: which keys the PAC*/AUT* instructions of EL0 use (off: NOPs)
SCTLR_ENIA, SCTLR_ENIB, SCTLR_ENDA, SCTLR_ENDB = 1 << 31, 1 << 30, 1 << 27, 1 << 13
SCTLR_PAUTH_EN = SCTLR_ENIA | SCTLR_ENIB | SCTLR_ENDA | SCTLR_ENDB

SCTLR_DZE = 1 << 14          # EL0 may execute DC ZVA
SCTLR_UCT = 1 << 15          # EL0 may read CTR_EL0
SCTLR_UCI = 1 << 26          # EL0 may execute DC CVAU/CVAC/CIVAC/CVAP and IC IVAU

CPACR_FPEN_ALL = 3 << 20
CPACR_ZEN_EL1 = 1 << 16      # ZEN=01: SVE usable at EL1, trapped at EL0
CPACR_ZEN_ALL = 3 << 16      # ZEN=11: SVE usable at EL0 too

SVE_VL_MIN, SVE_VL_MAX = 128, 2048
SVE2_MICROCODE = STUB_BASE + 0x8000     # the SVE2 unit's transfer microcode (machine/sve2/xfer.py)


# ---- kernel text: instruction sequences the kernel runs on this CPU --------------------------------
KERNEL_TEXT = STUB_BASE + 0x1000  # the kernel's sequences, after the eret page (install_kernel_text)
KERNEL_SEQ_BRK_IMM = 0xE4E
KERNEL_SEQ_RET = 0xD4200000 | (KERNEL_SEQ_BRK_IMM << 5)   # brk #0xe4e: every sequence's "ret"
STUB_ARG_REGS = (0, 1, 2, 3)      # argument registers of a sequence (saved/restored around it)
# what a stub chain saves in the hook and puts back after the last stub: x0-x3 and the user PC
# (two tuple objects: Cpu.batch_reader/batch_writer cache one closure per tuple identity)
_CHAIN_SAVE = tuple([_X[r] for r in STUB_ARG_REGS] + [A.UC_ARM64_REG_PC])
_CHAIN_RESTORE = tuple(list(_CHAIN_SAVE))
# A sequence never sees kernel memory itself: each CPU has one bounce buffer, the only buffer
# memory Unicorn can see, no-access outside a run that asked for it.  A "loads" sequence gets the
# kernel's buffer copied in first, a "saves" sequence's bounce buffer is copied out after it.
# Its size holds one task's FP/SVE state at the largest VL (32 Z + 17 P of 2048 bits + FPSIMD).
BOUNCE_BASE = 0x40_0000_0000
BOUNCE_SIZE = 0x3000


@dataclass(frozen=True)
class KernelSeq:
    """One kernel instruction sequence in the kernel text: where it starts (offset), how many
    instructions it has (its closing ``brk #0xe4e`` included), whether it reads or writes the
    bounce buffer."""
    offset: int
    length: int
    loads: bool = False
    saves: bool = False
    # the sequence is exactly FPSIMD_LOAD_WORDS (fpsimd_load_state): the machine may perform it
    # through the register file (see Arm64Cpu._fpsimd_load_regs); checked word by word
    regfile_load: bool = False


def _fpsimd_load_words() -> tuple[int, ...]:
    """ldp q0, q1, [x0] ... ldp q30, q31, [x0, #480]; ldr w3, [x0, #512]; msr fpsr, x3;
    ldr w3, [x0, #516]; msr fpcr, x3; brk #0xe4e -- the one sequence whose effect the machine
    knows without running it: V0-V31 from 512 bytes at x0, then FPSR and FPCR from the next two
    words (x3 is clobbered, and x0-x3 are put back around every stub anyway)."""
    ldp = [0xAD400000 | (i << 15) | ((i + 1) << 10) | i for i in range(0, 32, 2)]   # imm7 = 16*i / 16
    return tuple(ldp + [0xB9400000 | (128 << 10) | 3, 0xD51B4420 | 3,
                        0xB9400000 | (129 << 10) | 3, 0xD51B4400 | 3, KERNEL_SEQ_RET])


FPSIMD_LOAD_WORDS = _fpsimd_load_words()


def _fpsimd_save_words() -> tuple[int, ...]:
    """stp q0, q1, [x0] ... stp q30, q31, [x0, #480]; mrs x3, fpsr; str w3, [x0, #512];
    mrs x3, fpcr; str w3, [x0, #516]; brk #0xe4e -- fpsimd_save_state, the other sequence whose
    effect the machine knows without running it: it only reads V0-V31 (the low 128 bits of Z,
    whatever the VL), FPSR and FPCR, and stores them as 520 bytes at x0 (x3 clobbered, put back
    like x0-x3 around every stub).  A sequence is recognised by its words at install, never by
    its name."""
    stp = [0xAD000000 | (i << 15) | ((i + 1) << 10) | i for i in range(0, 32, 2)]   # imm7 = 16*i / 16
    return tuple(stp + [0xD53B4420 | 3, 0xB9000000 | (128 << 10) | 3,
                        0xD53B4400 | 3, 0xB9000000 | (129 << 10) | 3, KERNEL_SEQ_RET])


FPSIMD_SAVE_WORDS = _fpsimd_save_words()
_U32_AT = struct.Struct("<I").unpack_from     # a little-endian word read in place (_syscall_word)
# an empty _svc_map entry (mm, version, first, last svc address, offset, buffer): no PC is in it
_NO_SVC_MAP: tuple[Any, ...] = (None, -1, 1, 0, 0, b"")


# ---- the native return from a flush sequence (native/a64_stub.c) ------------------------------------
def _writes_fp_only(word: int) -> bool:
    """The words a sequence may have for its return to be done natively: they write SIMD/SVE
    registers and nothing else (no general register, no memory, no system register), so the
    user's x0-x3 need not be saved around it.  ``orr vd.t, vn.t, vm.t`` (``mov v``), ``pfalse
    pd.b``, ``wrffr pn.b``."""
    return (word & 0xBFE0FC00 == 0x0EA01C00 or word & 0xFFFFFFF0 == 0x2518E400
            or word & 0xFFFFFE1F == 0x25289000)


ZHI_ZERO, ZHI_KEEP = "zero", "keep"


def zhi_effect(words: "Sequence[int]") -> str | None:
    """What a kernel sequence (``words``, its closing brk last) leaves in the Z bits above 128:
    ``ZHI_ZERO`` when it writes every V register with an AdvSIMD instruction (which zeroes the
    rest of the Z register up to the VL) and otherwise only P/FFR -- ``sve_flush_live`` -- or is
    the FPSIMD load (its ldp q pairs load all 32); ``ZHI_KEEP`` when it writes only P/FFR
    (``sve_flush_p``); None when the machine cannot tell (it may write them)."""
    body = list(words[:-1])
    if tuple(words) == FPSIMD_LOAD_WORDS:
        return ZHI_ZERO
    if not body or not all(_writes_fp_only(w) for w in body):
        return None
    written = {w & 0x1F for w in body if w & 0xBFE0FC00 == 0x0EA01C00}
    if not written:
        return ZHI_KEEP
    return ZHI_ZERO if written == set(range(32)) else None


_U64 = ctypes.c_uint64
_VP = ctypes.c_void_p


class _StubRet(ctypes.Structure):
    # the layout of ek_a64_ret in native/a64_stub.c
    _fields_ = [("count", _VP), ("deadline", _VP), ("guard_open", _VP), ("gx_lo", _VP), ("gx_hi", _VP),
                ("resync", _VP), ("blk_start", _VP), ("blk_end", _VP), ("pc_reg", _U64), ("guard_lo", _U64), ("guard_hi", _U64),
                ("entry", _U64), ("length", _U64), ("in_flight", _U64), ("ret_pc", _U64), ("ret_deadline", _U64),
                ("before", _U64), ("done_count", _U64), ("returns", _U64), ("tlb_flush", _U64),
                ("cp_ret", _U64)]


_A64_STUB_SRC = Path(__file__).with_name("native") / "a64_stub.c"
_stub_ret_lib: "ctypes.CDLL | None" = None
_stub_ret_error: str | None = None


def _native_stub_ret() -> Any:
    """native/a64_stub.c's hooks as function pointers (ek_a64_stub_enter, ek_a64_stub_ret,
    ek_a64_tlb_fill; built once, like the counter), or None when it cannot be built (then every
    stub chain goes through its brk, on the physical TLB)."""
    global _stub_ret_lib, _stub_ret_error
    if _stub_ret_lib is None and _stub_ret_error is None:
        from emukern.machine.counter import _build_native
        try:
            _stub_ret_lib = _build_native(_A64_STUB_SRC, "eka64stub")
        except OSError as exc:
            _stub_ret_error = str(exc)
    if _stub_ret_lib is None:
        return None
    return tuple(ctypes.cast(getattr(_stub_ret_lib, f), ctypes.c_void_p)
                 for f in ("ek_a64_stub_enter", "ek_a64_stub_ret", "ek_a64_tlb_fill"))


class _SvcEntry(ctypes.Structure):
    # the layout of ek_a64_intr_t in native/a64_stub.c: the CPU's INTR hook, which reads an svc's
    # PC, x8 and x0..x5 into ``sys`` (see Arm64Cpu._svc_entry)
    _fields_ = [("py", _VP), ("py_svc", _VP), ("ret", _VP), ("ids", _U64 * 8), ("sys", _U64 * 9)]


_SVC_CFUNC = ctypes.CFUNCTYPE(None)        # ek_a64_intr's svc callback: void (*)(void)
_SVC_REGS = struct.Struct("<9Q")
_SVC_REGS_AT = _SvcEntry.sys.offset


def _native_svc_intr() -> Any:
    """native/a64_stub.c's ek_a64_intr as a function pointer (the CPU's INTR hook with its own
    svc entry), or None when that library is unavailable (then the CPU's Python callback is the
    INTR hook, as before)."""
    if _native_stub_ret() is None:
        return None
    return ctypes.cast(getattr(_stub_ret_lib, "ek_a64_intr"), ctypes.c_void_p)


class _AtomicCheck(ctypes.Structure):
    # the layout of ek_a64_atomic_t in native/a64_stub.c: one atomic hook's user_data
    _fields_ = [("py", _VP), ("reg", _U64), ("mask", _U64)]


# the alignments an atomic may need (Atomic.align: 1..8, 16 for a CASP of X pairs), as an index
_ALIGN_SLOT = {1: 0, 2: 1, 4: 2, 8: 3, 16: 4}


class _AtomicHook(ctypes.c_size_t):
    """The handle of an atomic's native hook, with the (base register, alignment) its user_data
    names: a word rewritten into another atomic at the same address needs a new hook."""
    key: tuple[int, int]


def _native_atomic_check() -> Any:
    """native/a64_stub.c's ek_a64_atomic_check as a function pointer, or None when that library
    is unavailable (then the Python check is each atomic's hook, as before)."""
    if _native_stub_ret() is None:
        return None
    return ctypes.cast(getattr(_stub_ret_lib, "ek_a64_atomic_check"), ctypes.c_void_p)



class StubOverrun(RuntimeError):
    """A kernel stub did not reach its closing brk within its known length: an emulator bug
    (the stub page cannot be written or reached by the guest), reported instead of hanging."""


@dataclass
class StubOp:
    name: str
    args: tuple[int, ...]
    vl: int
    entry: int = 0
    length: int = 0
    buf: memoryview | None = None    # the kernel's buffer a load reads / a save fills
    loads: bool = False
    saves: bool = False
    regfile_load: bool = False
    regfile_save: bool = False       # the words are FPSIMD_SAVE_WORDS (found at install)
    # an argument-less sequence whose return native/a64_stub.c may do (in _native_ret): what
    # _chain_begin tests first, once per syscall of a TIF_SVE task
    native: bool = False


ARM64_MODEL_MAX = A.UC_CPU_ARM64_MAX     # QEMU's "max" CPU, the model every Arm64Cpu is


def read_model_sysregs(encodings: "list[tuple[int, int, int, int, int]]",
                       cpu_model: int = ARM64_MODEL_MAX) -> list[int]:
    """The reset values of system registers (op0, op1, crn, crm, op2) of a CPU model, read from a
    fresh, never-run instance: the ID registers the kernel sanitises, without booting a CPU."""
    uc = Uc(UC_ARCH_ARM64, UC_MODE_ARM)
    uc.ctl_set_cpu_model(cpu_model)
    # (what UcAArch64.cpr_read(op0, op1, crn, crm, op2) does)
    return [int(uc.reg_read(A.UC_ARM64_REG_CP_REG, (crn, crm, op0, op1, op2)))
            for op0, op1, crn, crm, op2 in encodings]


def is_sve_encoding(word: int) -> bool:
    """True for the SVE encoding space (op0 = 0b0010 in bits 28:25)."""
    return (word >> 25) & 0xF == 0b0010


def decode_sysreg_insn(word: int) -> tuple[int, int, int, int, int, int, bool] | None:
    """(op0, op1, crn, crm, op2, rt, is_read) for MRS/MSR (register), else None."""
    if word & 0xFFD00000 != 0xD5100000:       # 1101 0101 00 L 1 op0[1] ...
        return None
    is_read = bool(word & (1 << 21))
    op0 = 2 + ((word >> 19) & 1)
    op1 = (word >> 16) & 7
    crn = (word >> 12) & 0xF
    crm = (word >> 8) & 0xF
    op2 = (word >> 5) & 7
    rt = word & 0x1F
    return op0, op1, crn, crm, op2, rt, is_read


def sysreg_iss(op0: int, op1: int, crn: int, crm: int, op2: int, rt: int, is_read: bool) -> int:
    """ISS of an EC 0x18 trap (ARM ARM D17.2.37)."""
    return (op0 << 20) | (op2 << 17) | (op1 << 14) | (crn << 10) | (rt << 5) | (crm << 1) | int(is_read)


class Arm64Cpu(Cpu):
    arch = "arm64"
    scan_code = True          # words that abort Unicorn's translator are exits (a64_unallocated)
    batch_vector = True       # the SVE2 unit runs consecutive SVE2 words in one trap (debugger: off)

    def __init__(self, index: int, clock: Clock, *, sve_vl: int = 256, idst: bool = False,
                 sve: bool = True, cpu_model: str = "qemu-max",
                 sve_idregs: tuple[int, int] | None = None) -> None:
        uc = new_uc(UC_ARCH_ARM64, UC_MODE_ARM, f"arm64 CPU {index}")
        uc_internal.configure(uc, "ctl_set_cpu_model", A.UC_CPU_ARM64_MAX)
        self._vtlb = False          # on Unicorn's virtual TLB (see "Machine pages"; set below)
        self._atomics: dict[int, Atomic] = {}   # scanned LSE atomics by address (a64_atomics)
        # the alignment check of the atomics Unicorn runs itself (see _flush_exits)
        self._native_atomics = True
        self._atomic_cb = uc_internal.CODE_CFUNC(self._atomic_check)
        # the C check's user_data, one per (base register, alignment), made on first use
        # (_atomic_hook); it lives as long as the CPU, so as long as any engine's hook on it
        self._atomic_ud: Any = None
        super().__init__(index, clock, uc)
        self.idst = idst                   # FEAT_IDST: EL0 ID-register reads trap as EC 0x18
        self.has_sve = sve
        # Machine pages (see "Machine pages" in the module docstring): the stub code is
        # execute-only and guarded against user execution; the bounce buffer is accessible only
        # while a save/load stub runs.
        uc_internal.map_fixed(uc, STUB_BASE, STUB_SIZE, UC_PROT_EXEC)
        uc.mem_write(STUB_BASE, (0xD69F03E0).to_bytes(4, "little"))      # eret
        self._guard = CodeGuard(self.counter, STUB_BASE, STUB_BASE + STUB_SIZE - 1)
        # The native flush (see _chain_begin) and the virtual TLB (see "Machine pages"): the C
        # side's state, its hooks, the entries of the sequences whose closing brk has the C
        # return, and the op armed or in flight until Python accounts it (_native_settle)
        self._ret: _StubRet | None = None
        self._ret_hooks: list[ctypes.c_size_t] = []
        self._native_ret: set[int] = set()
        self._pending: StubOp | None = None
        # a lone flush left for the next user run to enter first (see _restart_plan), and the
        # CPACR_EL1 value its native return writes when EL0 SVE traps after it
        self._restart_op: StubOp | None = None
        from unicorn.unicorn_py3.arch.arm64 import UcRegCP64
        op0, op1, crn, crm, op2 = CPACR_EL1
        self._cpacr_zen_off = UcRegCP64(crn, crm, op0, op1, op2, CPACR_FPEN_ALL | CPACR_ZEN_EL1)
        if isinstance(self.counter, NativeCounter):
            cs, f = self.counter._s, _CounterStruct
            base = ctypes.addressof(cs)
            self._ret = _StubRet(base + f.count.offset, base + f.deadline.offset, base + f.guard_open.offset,
                                 base + f.gx_lo.offset, base + f.gx_hi.offset, base + f.resync.offset,
                                 base + f.blk_start.offset, base + f.blk_end.offset,
                                 A.UC_ARM64_REG_PC, STUB_BASE, STUB_BASE + STUB_SIZE)
            self._use_virtual_tlb()
            self._ret.tlb_flush = int(not self._vtlb)
        self._tlb_flush = uc_internal.tlb_flusher(uc)     # (the binding has no TLB flush wrapper)
        self._bounce = mmap.mmap(-1, BOUNCE_SIZE)
        self._bounce_addr = ctypes.addressof(ctypes.c_char.from_buffer(self._bounce))
        uc_internal.map_fixed(uc, BOUNCE_BASE, BOUNCE_SIZE, UC_PROT_NONE, self._bounce_addr)
        self._bounce_open = False
        self.cpr_write(CPTR_EL3, self.cpr_read(CPTR_EL3) | (1 << 8))     # EZ: SVE not trapped to EL3
        self.cpr_write(ZCR_EL2, 0xF)
        self.cpr_write(ZCR_EL3, 0xF)
        self.cpr_write(CNTKCTL_EL1, 0)       # EL0 counter reads go through the MRS hook
        self._seqs: dict[str, tuple[int, int, bool, bool, bool, bool]] = {}   # name -> entry, length, loads, saves, regfile_load, regfile_save
        self._kernel_text = b""
        self._stub_queue: list[StubOp] = []
        self._plain_ops: dict[tuple[str, int], StubOp] = {}     # queue_stub's argument-less ops
        self._plain_last: dict[str, StubOp] = {}      # name -> its op last queued (queue_seq)
        self._chain: tuple[list[int], int, int] | None = None   # in-flight: x0-x3+pc, -, deadline
        self._chain_op: tuple[StubOp, int] | None = None
        self.stub_stats: Counter[str] = Counter()        # stub name -> runs
        self.stub_cycles: Counter[str] = Counter()       # stub name -> instructions executed
        self.sve_el0 = False                 # what the kernel programmed (CPACR_EL1.ZEN == 11)
        # the pointer authentication keys and SCTLR_EL1.EnXX bits in the registers now (None: the
        # reset keys, never loaded; see enable_pointer_auth)
        self._pauth_keys: tuple[int, ...] | None = None
        self._pauth_en = 0
        # Z bits above 128 are zero on every register (a fresh CPU), and nothing since could have
        # written them: no EL0 SVE access was granted and no kernel sequence other than the
        # FPSIMD load and save (which write no Z bits) ran.  While this holds, the FPSIMD load's zeroing of those bits is a no-op
        # and the load can go through the register file (_fpsimd_load_regs).
        self._zhi_clean = True
        # entry -> zhi_effect of each kernel sequence (install_kernel_text): a sequence that
        # leaves Z above 128 zero makes it known zero again until EL0 may run with SVE enabled,
        # so an FPSIMD load queued after it (a context switch after a TIF_SVE task's syscall
        # flush) can go through the register file
        self._zhi_effect: dict[int, str | None] = {}
        # V0-V31 (16 bytes each), then FPSR and FPCR: the FPSIMD state in one libunicorn batch,
        # read or written, laid out as Linux's user_fpsimd_state itself (FPSR at 512, FPCR at
        # 516; Unicorn reads and writes only the low 4 bytes of either): the kernel's 520 bytes go
        # to the registers with one copy (_fpsimd_load_regs), and a save reads the registers
        # straight into the bounce buffer (_fpsimd_save_regs, the pointers per offset there)
        self._fp_ids = (ctypes.c_int * 34)(*_Q, A.UC_ARM64_REG_FPSR, A.UC_ARM64_REG_FPCR)
        self._fp_state = (ctypes.c_char * 528)()
        self._fp_state_mv = memoryview(self._fp_state).cast("B")[:520]
        self._fp_state_ptrs = self._fpsimd_ptrs(ctypes.addressof(self._fp_state))
        self._fp_bounce_ptrs: dict[int, Any] = {}
        self._cpacr_w = self._cpr_writer(CPACR_EL1)
        self._zcr_w = self._cpr_writer(ZCR_EL1)
        self._hw_zen: bool | None = None     # what is in the register right now
        self._hw_vl = 0
        self.vl = 0
        self._write_cpacr()
        self._at_el0 = False
        self.set_vl(sve_vl)
        self._svc_s: _SvcEntry | None = None        # ek_a64_intr's struct (_hook_intr_native)
        if not self._hook_intr_native():
            self.hook_intr(self._hook_intr, fast=(2, self._svc))
        self.sve2 = self._make_sve2(cpu_model, sve_idregs) if sve else None
        self._syscall_batch = self.make_batch([_X[8]] + _X[0:6])
        self._ctx_batches: dict[bool, tuple[Any, Any, Any]] = {}      # see _ctx_batch
        self._chain_save = self.make_batch(_CHAIN_SAVE)          # a stub chain's x0-x3 + user PC
        self._chain_restore = self.make_batch_writer(_CHAIN_RESTORE)
        self._sys_fill, self._sys_get = self.make_batch_parts([A.UC_ARM64_REG_PC, _X[8]] + _X[0:6])
        self._svc_map: tuple[tuple[Any, ...], ...] = ()     # _syscall_word's mappings, newest first
        # the UNDEF path's own caches (see _undef_word and _hook_intr): the executable mapping
        # the last UNDEF came from, and word -> (kind, ESR) of words whose syndrome depends on
        # the word alone (not in the SVE space, not a counter read)
        self._undef_map: tuple[Any, ...] | None = None
        self._undef_syndrome: dict[int, tuple[TrapKind, int]] = {}

    # ---- system registers ----------------------------------------------------------------------
    def enable_pointer_auth(self) -> None:
        """Let EL0 sign and authenticate pointers with the keys :meth:`load_ptrauth_keys` loads.

        Measured on Unicorn 2.1.4: with SCTLR_EL1.EnXX set, a PAC/AUT instruction still traps
        (as UNDEF) unless SCR_EL3.API/APK allow it *and* HCR_EL2.API/APK do -- and QEMU reads
        HCR_EL2 as all-zero in secure state, so EL1/EL0 are made non-secure (SCR_EL3.NS, with
        SCR_EL3.RW and HCR_EL2.RW keeping EL2/EL1 in AArch64).  Nothing else of EL2 is set: no
        trap to EL2 (CPTR_EL2, CNTHCTL_EL2, HCR_EL2.TGE ...) is enabled.  TCR_EL1 gets the
        48-bit VA and TBI0 that Linux programs, which is what puts the PAC in bits 54:48 of a
        user pointer (ptrauth_user_pac_mask) rather than also in the top byte."""
        self.cpr_write(SCR_EL3, self.cpr_read(SCR_EL3) | SCR_NS | SCR_RW | SCR_API | SCR_APK)
        self.cpr_write(HCR_EL2, self.cpr_read(HCR_EL2) | HCR_RW | HCR_API | HCR_APK)
        self.cpr_write(TCR_EL1, (self.cpr_read(TCR_EL1) & ~0x3F) | TCR_T0SZ_48 | TCR_TBI0)
        self._pauth_keys = None
        self._pauth_en = 0

    def load_ptrauth_keys(self, keys: tuple[int, ...], enabled: int) -> bool:
        """ptrauth_keys_install_user plus the SCTLR_EL1.EnXX half of the task's sctlr_user:
        ``keys`` are the five 128-bit keys (APIA, APIB, APDA, APDB, APGA), ``enabled`` the
        SCTLR_EL1 EnIA/EnIB/EnDA/EnDB bits.  Registers are written only where they differ from
        what this CPU holds (a write of SCTLR_EL1 makes QEMU drop its translated-code flags).
        True if anything was written."""
        changed = False
        if keys != self._pauth_keys:
            old = self._pauth_keys or (None,) * 5
            for (lo, hi), k, o in zip(PAUTH_KEY_REGS, keys, old):
                if k != o:
                    self.cpr_write(lo, k & 0xFFFF_FFFF_FFFF_FFFF)
                    self.cpr_write(hi, k >> 64)
            self._pauth_keys = keys
            changed = True
        if enabled != self._pauth_en:
            self.cpr_write(SCTLR_EL1, (self.cpr_read(SCTLR_EL1) & ~SCTLR_PAUTH_EN) | (enabled & SCTLR_PAUTH_EN))
            self._pauth_en = enabled
            changed = True
        return changed

    def set_el0_cache_controls(self, *, uct: bool, uci: bool, dze: bool) -> None:
        """SCTLR_EL1.UCT/UCI/DZE: whether EL0 may read CTR_EL0, do cache maintenance by VA to
        the point of coherency/unification, and zero blocks with DC ZVA (the kernel's choice)."""
        v = self.cpr_read(SCTLR_EL1) & ~(SCTLR_UCT | SCTLR_UCI | SCTLR_DZE)
        v |= (SCTLR_UCT if uct else 0) | (SCTLR_UCI if uci else 0) | (SCTLR_DZE if dze else 0)
        self.cpr_write(SCTLR_EL1, v)

    def cpr_read(self, enc: tuple[int, int, int, int, int]) -> int:
        op0, op1, crn, crm, op2 = enc
        return self.uc.reg_read(A.UC_ARM64_REG_CP_REG, (crn, crm, op0, op1, op2))

    def cpr_write(self, enc: tuple[int, int, int, int, int], value: int) -> None:
        op0, op1, crn, crm, op2 = enc
        self.uc.reg_write(A.UC_ARM64_REG_CP_REG, (crn, crm, op0, op1, op2, value))

    def _cpr_writer(self, enc: tuple[int, int, int, int, int]) -> Any:
        """:meth:`cpr_write` of one register as a direct libunicorn call on a prebuilt
        uc_arm64_cp_reg: the binding's reg_write picks the register class through a generator and
        builds the structure on every call, and _hw_set writes CPACR_EL1 twice per stub run."""
        return uc_internal.cp_reg_writer(self.uc, enc)

    def _hw_set(self, zen: bool, vl: int) -> None:
        if zen != self._hw_zen:
            self._cpacr_w(CPACR_FPEN_ALL | (CPACR_ZEN_ALL if zen else CPACR_ZEN_EL1))
            self._hw_zen = zen
        if vl and vl != self._hw_vl:
            self._zcr_w(vl // 128 - 1)
            self._hw_vl = vl

    def _stubs_pending(self) -> bool:
        return bool(self._stub_queue) or self._chain is not None

    def _write_cpacr(self) -> None:
        if not self._stubs_pending():
            self._hw_set(self.sve_el0, self.vl)

    def set_sve_el0(self, enabled: bool) -> bool:
        """CPACR_EL1.ZEN: let EL0 execute SVE (11) or trap it (01).  True if the value changed.

        With kernel stubs queued, the register is written after they have run (program order)."""
        if enabled != self.sve_el0:
            self.sve_el0 = enabled
            if enabled and not self._stubs_pending():
                self._zhi_clean = False       # EL0 SVE may write Z above 128 bits from now on
            # (with stubs queued, EL0 runs only after them: whatever empties the queue clears
            # it then, so an FPSIMD load queued before this call may still go through the
            # register file -- the load at a switch to a TIF_SVE task, before its sve_flush_p)
            self._write_cpacr()
            return True
        return False

    def set_vl(self, vl_bits: int) -> bool:
        """Program ZCR_EL1.LEN for a vector length in bits (a multiple of 128).  True if changed.

        With kernel stubs queued, the register is written after they have run (each stub runs at
        the VL programmed when it was queued)."""
        if vl_bits % 128 or not SVE_VL_MIN <= vl_bits <= SVE_VL_MAX:
            raise ValueError(f"SVE vector length {vl_bits} is not a multiple of 128 in 128..2048")
        changed = vl_bits != self.vl
        self.vl = vl_bits
        if not self._stubs_pending():
            self._hw_set(self.sve_el0, vl_bits)
        return changed

    # ---- SVE kernel stubs (see the module docstring) -------------------------------------------
    def install_kernel_text(self, image: bytes, seqs: "Mapping[str, KernelSeq]") -> None:
        """Load the kernel's instruction sequences into the execute-only stub page (at
        :data:`KERNEL_TEXT`); ``seqs`` names each one.  Idempotent for the same image.

        The machine checks what it needs to stay safe, not what the code does: every sequence
        lies inside the text and ends in ``brk #0xe4e`` (its "ret")."""
        if image == self._kernel_text:
            return
        if self._kernel_text:
            raise RuntimeError("this CPU already has different kernel text")
        if KERNEL_TEXT + len(image) > SVE2_MICROCODE:
            raise ValueError(f"kernel text of {len(image)} bytes does not fit the stub page")
        table: dict[str, tuple[int, int, bool, bool, bool, bool]] = {}
        for name, q in seqs.items():
            end = q.offset + 4 * q.length
            if q.length < 1 or q.offset % 4 or end > len(image) \
                    or int.from_bytes(image[end - 4:end], "little") != KERNEL_SEQ_RET:
                raise ValueError(f"kernel sequence {name!r} does not end in brk #{KERNEL_SEQ_BRK_IMM:#x} "
                                 f"inside the kernel text")
            if q.regfile_load and (not q.loads or tuple(
                    int.from_bytes(image[o:o + 4], "little") for o in range(q.offset, end, 4)) != FPSIMD_LOAD_WORDS):
                raise ValueError(f"kernel sequence {name!r} is marked regfile_load but is not the "
                                 f"FPSIMD load sequence the machine knows")
            # the FPSIMD save is recognised by its words alone (and needs the bounce buffer it
            # is copied out of): then the machine may perform it through the register file
            regfile_save = q.saves and tuple(
                int.from_bytes(image[o:o + 4], "little") for o in range(q.offset, end, 4)) == FPSIMD_SAVE_WORDS
            table[name] = (KERNEL_TEXT + q.offset, q.length, q.loads, q.saves, q.regfile_load, regfile_save)
        self._write_fixed(KERNEL_TEXT, image)
        self._kernel_text = bytes(image)
        self._seqs = table
        self._zhi_effect = {KERNEL_TEXT + q.offset: zhi_effect(
            [int.from_bytes(image[o:o + 4], "little") for o in range(q.offset, q.offset + 4 * q.length, 4)])
            for q in seqs.values()}
        self._install_native_returns(image, seqs)

    def _engine_opened(self, src: int) -> None:
        """A new engine for another address space: the stub page as the machine wrote it (the
        eret, the kernel text, the SVE2 microcode), and the bounce buffer's access as it is."""
        es = self._es
        assert es is not None
        dst = es.current
        es.select(src)
        try:
            page = bytes(self.uc.mem_read(STUB_BASE, STUB_SIZE))
        finally:
            es.select(dst)
        self.uc.mem_write(STUB_BASE, page)
        if self._bounce_open:
            self.uc.mem_protect(BOUNCE_BASE, BOUNCE_SIZE, UC_PROT_READ | UC_PROT_WRITE)

    def _use_virtual_tlb(self) -> None:
        """Run on Unicorn's virtual TLB with native/a64_stub.c's fill hook (see "Machine pages"):
        the identity mapping, as the physical TLB gives with the MMU off, a data access's entry
        without fetch permission (so stores take Unicorn's fast path: counter.c's ek_tlb_fill
        says why), except in the stub page, whose entries carry only the permission of the
        access that filled them -- so the stubs' instruction fetches leave nothing a user load
        could hit, and no TLB flush is needed when stubs end.  Without the native library: the
        physical TLB."""
        fns = _native_stub_ret()
        if fns is None or self._ret is None:
            return
        hh = uc_internal.use_tlb_fill(self.uc, fns[2], ctypes.cast(ctypes.pointer(self._ret), ctypes.c_void_p))
        self._ret_hooks.append(hh)
        self._vtlb = True
        self._faults_from_engine()      # (a memory hook would keep every store on the slow path)

    def _install_native_returns(self, image: bytes, seqs: "Mapping[str, KernelSeq]") -> None:
        """A code hook (native/a64_stub.c) on the closing brk of every sequence that touches no
        buffer and writes only SIMD/SVE registers (the flushes): armed by :meth:`_chain_begin`,
        it returns to the user PC there, in the same emu_start, without the brk's exception."""
        fns = _native_stub_ret() if self._ret is not None else None
        if fns is None:
            return
        enter, fn = fns[0], fns[1]
        assert self._ret is not None
        ud = ctypes.cast(ctypes.pointer(self._ret), ctypes.c_void_p)
        # the entry, an INTR hook after this CPU's own (added in __init__): it runs once the
        # kernel has handled the trap and armed a flush
        status, hh = uc_internal.hook_add_native(self.uc, UC_HOOK_INTR, enter, ud)
        if status != 0:
            raise UcError(status)
        self._ret_hooks.append(hh)
        for q in seqs.values():
            words = [int.from_bytes(image[o:o + 4], "little") for o in range(q.offset, q.offset + 4 * q.length, 4)]
            if q.loads or q.saves or q.length < 2 or not all(_writes_fp_only(w) for w in words[:-1]):
                continue
            brk = KERNEL_TEXT + q.offset + 4 * (q.length - 1)
            status, hh = uc_internal.hook_add_native(self.uc, UC_HOOK_CODE, fn, ud, brk, brk)
            if status != 0:
                raise UcError(status)
            self._ret_hooks.append(hh)
            self._native_ret.add(KERNEL_TEXT + q.offset)

    def queue_stub(self, name: str, *args: int, buf: memoryview | None = None) -> None:
        """Queue a kernel sequence to run on this CPU (in order, before any further user
        instruction).  ``args`` go to x0-x3; for a sequence that loads or saves, ``buf`` is the
        kernel buffer copied into the bounce buffer before it / out of it after it."""
        seq = self._seqs.get(name)
        if seq is None:
            raise KeyError(f"no kernel stub {name!r} (install_kernel_text first)")
        entry, n, loads, saves, regfile, regfile_save = seq
        if loads or saves:
            if buf is None or len(buf) > BOUNCE_SIZE:
                raise ValueError(f"kernel stub {name!r} needs a buffer of at most {BOUNCE_SIZE} bytes")
        elif not args and buf is None:
            # an argument-less sequence (a flush: once per syscall of a TIF_SVE task): one StubOp
            # per (name, VL), reused -- nothing changes an op once it is queued
            key = (name, self.vl)
            op = self._plain_ops.get(key)
            if op is None:
                op = self._plain_ops[key] = StubOp(name, (), self.vl, entry, n, None, False, False, regfile,
                                                   native=entry in self._native_ret and not regfile)
            self._plain_last[name] = op
            self._stub_queue.append(op)
            return
        self._stub_queue.append(StubOp(name, args, self.vl, entry, n, buf, loads, saves, regfile, regfile_save))

    def queue_seq(self, name: str) -> None:
        """:meth:`queue_stub` of an argument-less sequence (the flush every syscall of a TIF_SVE
        task queues): the op it queued last time for this name, when it was made at the VL the
        CPU has now -- the same op queue_stub would find, without its name and argument tests
        and its key."""
        op = self._plain_last.get(name)
        if op is not None and op.vl == self.vl:
            self._stub_queue.append(op)
        else:
            self.queue_stub(name)

    def run_stub(self, name: str, *args: int, buf: memoryview | None = None) -> None:
        """Queue a stub and run the queue now (synchronously)."""
        self.queue_stub(name, *args, buf=buf)
        self.stub_sync()

    def stub_sync(self) -> None:
        """Run every queued stub now: a direct emu_start, or a nested one inside a hook."""
        if not self._stub_queue:
            return
        if self._chain is not None:
            raise RuntimeError("stub_sync while a stub chain is running")
        saved = {r: self._read(_X[r]) for r in STUB_ARG_REGS}
        pc = self.get_pc()
        deadline = self.counter.deadline
        try:
            while self._stub_queue:
                op = self._stub_queue[0]
                if self._regfile_ok(op):
                    self._stub_queue.pop(0)
                    self._fpsimd_load_regs(op)
                    continue
                entry, n = op.entry, op.length
                self._stub_prepare(op)
                before = self.counter.count
                # the counter stops the run before the final brk (which stands for the ret) ...
                self.counter.deadline = before + n - 1
                self.uc.emu_start(entry, UNTIL_NEVER)
                if self.counter.count - before != n - 1 or self.get_pc() != entry + 4 * (n - 1):
                    raise StubOverrun(f"kernel stub {op.name} did not reach its closing brk within "
                                      f"{n} instructions (pc {self.get_pc():#x}): emulator error")
                self.counter.count += 1                          # ... counted here
                self._stub_queue.pop(0)
                self._stub_account(op, before)
                if self._zhi_effect.get(op.entry) == ZHI_ZERO:
                    self._zhi_clean = True
        finally:
            if self.sve_el0:
                self._zhi_clean = False       # EL0 runs next with SVE enabled: it may write them
            self._stub_queue.clear()
            for r, v in saved.items():
                self._write(_X[r], v)
            self.set_pc(pc)
            self._close_window()          # PC outside the window first (see _chain_step)
            self.counter.deadline = deadline
            self._hw_set(self.sve_el0, self.vl)

    def _open_window(self, bounce: bool = False) -> None:
        """Kernel stubs are about to run (no user instruction can execute on this CPU until
        :meth:`_close_window`): open the code guard, and the bounce buffer if asked."""
        self._guard.open = True
        if bounce and not self._bounce_open:
            self.uc.mem_protect(BOUNCE_BASE, BOUNCE_SIZE, UC_PROT_READ | UC_PROT_WRITE)
            self._bounce_open = True

    def _close_window(self) -> None:
        if not self._guard.open:
            return
        self._guard.open = False
        if self._bounce_open:
            self.uc.mem_protect(BOUNCE_BASE, BOUNCE_SIZE, UC_PROT_NONE)   # flushes the TLB too
            self._bounce_open = False
        elif not self._vtlb:
            # Unicorn checks a page's permissions when it fills a TLB entry, and on its physical
            # TLB the stubs' instruction fetches filled entries that would let data accesses
            # through: drop them, so a user load or store there is checked against the
            # execute-only mapping (the virtual TLB this CPU uses fills per access type)
            self._tlb_flush()

    def _stub_prepare(self, op: StubOp) -> None:
        if op.entry not in self._zhi_effect or self._zhi_effect[op.entry] is None:
            self._zhi_clean = False           # (the machine does not know what it writes)
        self._open_window(bounce=op.loads or op.saves)
        if self._hw_zen is not True or op.vl != self._hw_vl:
            self._hw_set(True, op.vl)
        if op.loads and op.buf is not None:
            self._bounce[:len(op.buf)] = op.buf
        for r, v in zip(STUB_ARG_REGS, op.args):
            self._write(_X[r], v)

    def _stub_retired(self, op: StubOp) -> None:
        """``op`` performed without a run: its instructions counted as retired, as a run of the
        sequence counts them, and accounted as one (the clock, ``stub_insns``, ``stub_stats``,
        a saving sequence's bounce buffer copied out)."""
        before = self._cs.count
        self._cs.count = before + op.length
        self._stub_account(op, before)

    def _stub_account(self, op: StubOp, before: int) -> None:
        n = self._cs.count - before
        self.stub_insns += n
        self.stub_stats[op.name] += 1
        self.stub_cycles[op.name] += n
        if op.saves and op.buf is not None:
            op.buf[:] = self._bounce[:len(op.buf)]

    def _regfile_ok(self, op: StubOp) -> bool:
        """May ``op`` go through the register file?  The verified FPSIMD load, with Z known to be
        zero above 128 bits (so the AdvSIMD loads' zeroing up to the VL changes nothing) and its
        x0 pointing at 520 bytes inside the buffer copied to the bounce buffer; or the verified
        FPSIMD save (it reads only what the register API shows, so no condition on Z) with its
        x0 pointing at 520 bytes inside the buffer copied out of the bounce buffer.  The save
        is the first half of every context switch away from a task with live FP state."""
        if op.buf is None or not op.args:
            return False
        if op.regfile_save:
            off = op.args[0] - BOUNCE_BASE
            return 0 <= off and off + 520 <= len(op.buf) <= BOUNCE_SIZE
        if not op.regfile_load or not self._zhi_clean:
            return False
        off = op.args[0] - BOUNCE_BASE
        return 0 <= off and off + 520 <= len(op.buf)

    def _fpsimd_load_regs(self, op: StubOp) -> None:
        """The FPSIMD load (or save: :meth:`_fpsimd_save_regs`) sequence's effect, from the kernel buffer it would have been handed:
        V0-V31 in one libunicorn batch, then FPSR and FPCR (msr fpsr/fpcr write the same
        helpers the register API does).  Its instructions, the closing brk included, are counted
        as retired kernel instructions exactly as a run of the sequence counts them, so the
        clock, ``stub_insns`` and ``stub_stats`` are those of running it.  (Only what the stub
        would leave in x3 differs, and x0-x3 are put back after every stub.)"""
        if op.regfile_save:
            self._fpsimd_save_regs(op)
            return
        off = op.args[0] - BOUNCE_BASE
        self._fp_state_mv[:] = op.buf[off:off + 520]      # type: ignore[index]   # V0-V31, FPSR, FPCR
        self._uc_rwb(self._engine, self._fp_ids, self._fp_state_ptrs, 34)
        self._stub_retired(op)

    @staticmethod
    def _fpsimd_ptrs(at: int) -> Any:
        """Where a batch of V0-V31, FPSR, FPCR (``_fp_ids``) reads or writes user_fpsimd_state
        at address ``at``: 16 bytes per V register, then the two 32-bit registers."""
        return (ctypes.c_void_p * 34)(*[at + 16 * i for i in range(32)], at + 512, at + 516)

    def _fpsimd_save_regs(self, op: StubOp) -> None:
        """The FPSIMD save sequence's effect: V0-V31, FPSR and FPCR read in one batch and stored
        at x0 in the bounce buffer, whose whole length is then copied out to the kernel buffer
        as after a run of the sequence (the rest of the bounce buffer is what it held, exactly
        as a run leaves it).  Counted as a run counts it (the clock, ``stub_insns``,
        ``stub_stats``); Z above 128 bits is neither read nor written, so ``_zhi_clean`` stands.
        This spares a stub chain or an ``emu_start`` and the bounce buffer's two ``mem_protect``
        calls per switch away from a task with live FP state."""
        off = op.args[0] - BOUNCE_BASE
        ptrs = self._fp_bounce_ptrs.get(off)
        if ptrs is None:
            if not 0 <= off <= BOUNCE_SIZE - 520:      # (every caller checked it: _regfile_ok)
                raise ValueError(f"FPSIMD save at bounce offset {off} does not fit")
            ptrs = self._fp_bounce_ptrs[off] = self._fpsimd_ptrs(self._bounce_addr + off)
        self._uc_rrb(self._engine, self._fp_ids, ptrs, 34)
        self._stub_retired(op)          # (a regfile_save op saves, into the buffer queue_stub checked)

    def read_fpsimd_state(self) -> bytes:
        """V0-V31 (16 bytes each, little-endian), then FPSR and FPCR (4 bytes each): 520 bytes,
        the layout of Linux's user_fpsimd_state, in one libunicorn call.  Only the FPSIMD view:
        queued kernel stubs are not run first (a caller that needs them runs :meth:`stub_sync`)."""
        self._uc_rrb(self._engine, self._fp_ids, self._fp_state_ptrs, 34)
        return bytes(self._fp_state_mv)

    def _regfile_front(self) -> bool:
        """Perform the queued stubs at the front that may go through the register file; True
        when that emptied the queue (the ZEN/VL the kernel asked for meanwhile then apply)."""
        q = self._stub_queue
        while q and self._regfile_ok(q[0]):
            self._fpsimd_load_regs(q.pop(0))
        if q:
            return False
        if self.sve_el0:
            self._zhi_clean = False           # EL0 runs next with SVE enabled: it may write them
        if self.sve_el0 != self._hw_zen or self.vl != self._hw_vl:
            self._hw_set(self.sve_el0, self.vl)
        return True

    def _chain_begin(self, intr: bool = False) -> None:
        """From a hook: send the PC into the first queued stub; the brk at its end comes back.

        ``intr``: called from the INTR hook, so native/a64_stub.c's entry runs next and a lone
        flush may return natively even when ZEN or the VL in the registers are not yet as it
        runs -- provided they are to be so after it (EL0 SVE on, the VL it was queued at): then
        writing them now, before it, leaves every register as the chain would (it forces them
        for the stub and puts the kernel's values back after), and saves the chain's two Python
        callbacks and its window work: the SVE access trap's flush (do_sve_acc)."""
        q = self._stub_queue
        op = q[0]
        # (op.native first: such an op is neither a register-file load nor save, so the test
        # below for those is a no-op for it and may come second)
        if op.native and len(q) == 1 and self.vl == op.vl and self.sve_el0 and not self.counter.exact:
            if op.vl != self._hw_vl or self._hw_zen is not True:
                if not intr:
                    self._chain_from_queue()
                    return
                self._hw_set(True, op.vl)
            # The native flush (once per syscall of a TIF_SVE task, issue 19's hot path): a lone
            # flush with ZEN and the VL already as it runs and as they stay after it.  Armed here,
            # entered by the INTR hook after this one (native/a64_stub.c: it reads the user PC,
            # bounds the run by the sequence's length, opens the guard and sends the PC there);
            # its closing brk's code hook returns to the user PC, closes the guard, puts the
            # deadline back and flushes the TLB, as _chain_step would -- without libunicorn calls
            # from Python or a second Python callback.  The sequence writes no general register
            # (checked at install), so x0-x3 are not saved.  Its instructions are accounted at
            # the next Python entry (_native_settle): the same counts, stub_insns, stub_stats.
            r = self._ret
            r.entry = op.entry                       # type: ignore[union-attr]
            r.length = op.length                     # type: ignore[union-attr]
            q.clear()
            self._zhi_clean = False
            self._pending = op
            return
        if (op.regfile_load or op.regfile_save) and self._regfile_front():
            return
        op = q[0]
        if len(q) == 1 and op.entry in self._native_ret and op.vl == self._hw_vl and self._hw_zen is True \
                and self.sve_el0 and self.vl == op.vl and not self.counter.exact:
            self._arm_native(op)    # the same lone flush, after register-file work at the front
            return
        self._chain_from_queue()

    def _chain_from_queue(self) -> None:
        # x0-x3 and the user PC in one libunicorn call (put back in one by _chain_step)
        self._chain = (self._chain_save(), 0, self._cs.deadline)
        self._chain_next()

    def _arm_native(self, op: StubOp) -> None:
        """Arm the native flush of :meth:`_chain_begin` (its inline fast path, as a call)."""
        r = self._ret
        assert r is not None
        r.entry = op.entry
        r.length = op.length
        self._stub_queue.clear()
        self._zhi_clean = False
        self._pending = op

    def _native_settle(self) -> None:
        """Account the flush whose return the C hook did (or report one that never reached its
        closing brk: an emulator error, as a chained stub's overrun)."""
        op, r = self._pending, self._ret
        assert op is not None and r is not None
        self._pending = None
        if r.entry or r.in_flight:
            entered = not r.entry
            r.entry = r.in_flight = 0
            if entered:
                self._cs.deadline = r.ret_deadline
            self._guard.open = False
            raise StubOverrun(f"kernel stub {op.name} " + ("did not reach its closing brk within "
                              f"{op.length} instructions" if entered else "was armed but never entered")
                              + f" (pc {self.get_pc():#x}): emulator error")
        n = r.done_count - r.before
        if n != op.length:
            raise StubOverrun(f"kernel stub {op.name} retired {n} instructions, not its {op.length}: "
                              f"emulator error")
        self.stub_insns += n
        self.stub_stats[op.name] += 1
        self.stub_cycles[op.name] += n

    def _emu_start(self, pc: int) -> None:
        op = self._restart_op
        if op is not None:
            # the flush _restart_plan left: entered first in this run, as native/a64_stub.c's
            # entry does from the INTR hook, with the deadline cpu_base.run set for the user
            # code as the one its return puts back
            self._restart_op = None
            r, cs = self._ret, self._cs
            assert r is not None
            r.ret_pc = pc
            r.before = cs.count
            r.ret_deadline = cs.deadline
            cs.deadline = cs.count + op.length
            r.in_flight = 1
            self._guard.open = True
            self._pending = op
            pc = op.entry
        try:
            super()._emu_start(pc)
        finally:
            # a flush returned natively during the run: account it before anything reads the
            # counts (a run ends; a fault or an exit word goes to the kernel)
            r = self._ret
            if self._pending is not None and not r.in_flight and not r.entry:    # type: ignore[union-attr]
                self._native_settle()

    def _chain_next(self) -> None:
        op = self._stub_queue.pop(0)
        if op.buf is None and not op.args and self._hw_zen is True and op.vl == self._hw_vl:
            # a flush (once per syscall of a TIF_SVE task) with ZEN and the VL already as it
            # runs: all _stub_prepare has to do is open the code guard
            if self._zhi_effect.get(op.entry) is None:
                self._zhi_clean = False
            self._guard.open = True
        else:
            self._stub_prepare(op)
        cs = self._cs
        count = cs.count
        self._chain_op = (op, count)
        # bounded: the counter stops the CPU if the stub runs past its closing brk
        cs.deadline = count + op.length
        self._write(A.UC_ARM64_REG_PC, op.entry)      # set_pc
        self.counter.pc_written()

    def _chain_step(self) -> None:
        """The brk at the end of a stub: start the next one, or give the CPU back to the user."""
        chain, cur = self._chain, self._chain_op
        assert chain is not None and cur is not None
        op, before = cur
        if op.saves:
            self._stub_account(op, before)
        else:                                  # (_stub_account inline: every flush ends here)
            n = self._cs.count - before
            self.stub_insns += n
            self.stub_stats[op.name] += 1
            self.stub_cycles[op.name] += n
        self._chain_op = None
        if self._zhi_effect.get(op.entry) == ZHI_ZERO:
            self._zhi_clean = True
        q = self._stub_queue
        if q:
            while q and self._regfile_ok(q[0]):
                self._fpsimd_load_regs(q.pop(0))
            if q:
                self._chain_next()
                return
        self._chain = None
        if self.sve_el0:
            self._zhi_clean = False           # EL0 runs next with SVE enabled: it may write them
        self._chain_restore(chain[0])     # x0-x3, then the user PC
        # after the PC has left the window: Unicorn stops the run when an mem_protect removes
        # execute permission from the page the PC is on
        self._close_window()
        self._cs.deadline = chain[2]
        if self.sve_el0 != self._hw_zen or self.vl != self._hw_vl:
            self._hw_set(self.sve_el0, self.vl)

    def run_stub_quietly(self, name: str, *args: int, buf: memoryview | None = None) -> None:
        """Run one kernel sequence without leaving a trace on the clock (an inspection by a
        test or the debugger, e.g. reading Z/P/FFR with the kernel's save sequence)."""
        self.stub_sync()
        saved = (self.counter.count, self.stub_insns, self.stub_stats.copy(), self.stub_cycles.copy())
        self.run_stub(name, *args, buf=buf)
        self.counter.count, self.stub_insns, self.stub_stats, self.stub_cycles = saved

    # ---- registers -----------------------------------------------------------------------------
    def get_pc(self) -> int:
        return self._read(A.UC_ARM64_REG_PC)

    def set_pc(self, pc: int) -> None:
        self._write(A.UC_ARM64_REG_PC, pc)
        # a PC written from a hook leaves Unicorn's fault PCs imprecise until a block is left
        # through its exit check: the block counter does that at the next block (counter.c)
        self.counter.pc_written()

    def reg(self, i: int) -> int:
        if i == 31:
            return 0            # XZR in the register-number sense used by syndromes
        return self._read(_X[i])

    def set_reg(self, i: int, value: int) -> None:
        if i != 31:
            self._write(_X[i], value)

    def syscall_regs(self) -> list[int]:
        """[x8, x0..x5] in one call: the syscall number and its six arguments."""
        return self._syscall_batch()

    @property
    def sp(self) -> int:
        """The user stack pointer: SP_EL0 (the live SP once the CPU runs at EL0)."""
        return self._read(A.UC_ARM64_REG_SP if self._at_el0 else A.UC_ARM64_REG_SP_EL0)

    @sp.setter
    def sp(self, v: int) -> None:
        self.uc.reg_write(A.UC_ARM64_REG_SP if self._at_el0 else A.UC_ARM64_REG_SP_EL0, v)

    def reg_by_name(self, name: str) -> int:
        n = name.lower()
        if n == "sp":
            return self.sp
        if n in ("lr", "x30"):
            return self.reg(30)
        if n in ("fp", "x29"):
            return self.reg(29)
        return self.reg(int(n.lstrip("xw")))

    def _ctx_batch(self) -> tuple[Any, Any, Any]:
        """The context switch's register batch (:meth:`Cpu._make_ctx_batch`): x0..x30, the user
        SP (SP itself once the CPU runs at EL0, SP_EL0 before: see :attr:`sp`), PC, NZCV and
        TPIDR_EL0, in one libunicorn call each way.  (NZCV is a 32-bit register: its slot's
        upper half is only ever written by load_context, from a value save_context read.)"""
        key = self._at_el0
        b = self._ctx_batches.get(key)
        if b is None:
            sp = A.UC_ARM64_REG_SP if key else A.UC_ARM64_REG_SP_EL0
            b = self._ctx_batches[key] = self._make_ctx_batch(
                _X + [sp, A.UC_ARM64_REG_PC, A.UC_ARM64_REG_NZCV, A.UC_ARM64_REG_TPIDR_EL0])
        return b

    def save_context(self) -> dict[str, Any]:
        # (x0..x30, sp, pc, nzcv and tpidr_el0 in one libunicorn call: the binding's reg_read per
        # register was most of a thread switch)
        v = self._ctx_batch()[0]()
        ctx = {"x": list(v[:31]), "sp": v[31], "pc": v[32], "nzcv": v[33] & 0xFFFF_FFFF, "tpidr": v[34]}
        if self.single_step:
            ctx["ss"] = True            # SPSR_EL1.SS: the step stays armed across a switch
        return ctx

    def load_context(self, ctx: dict[str, Any]) -> None:
        _read, write, buf = self._ctx_batch()
        buf[0:31] = ctx["x"]
        buf[31] = ctx["sp"]
        buf[32] = ctx["pc"]
        buf[33] = ctx["nzcv"] & 0xFFFF_FFFF
        buf[34] = ctx["tpidr"]
        write()
        self.counter.pc_written()       # (as set_pc)
        self.single_step = ctx.get("ss", False)

    def step_trap(self) -> Trap:
        """The software-step exception (EC 0x32; ISS: ISV set, EX clear -- the stepped
        instruction was no load-exclusive -- and IFSC 0x22, a debug exception), taken with the
        ELR at the next instruction."""
        return Trap(TrapKind.BREAKPOINT, self.arch, self.get_pc(), cpu=self.index,
                    esr=(ESR_EC_SOFTSTP_LOW << 26) | ESR_IL | (1 << 24) | 0x22, detail="software step")

    def reg_read(self, name: str) -> int:
        """:meth:`Cpu.reg_read`; the FP/SIMD registers after any queued kernel stubs ran (as
        :meth:`save_fp`)."""
        if regs.regid(self.arch, name) in _FP_IDS:
            self.stub_sync()
        return super().reg_read(name)

    def reg_write(self, name: str, value: int) -> None:
        """:meth:`Cpu.reg_write`; the FP/SIMD registers after any queued kernel stubs ran (as
        :meth:`load_fp`), so none of them overwrites the value."""
        if regs.regid(self.arch, name) in _FP_IDS:
            self.stub_sync()
        super().reg_write(name, value)

    def save_fp(self) -> dict[str, Any]:
        """FPSIMD state: V0-V31 (the low 128 bits of Z), FPSR, FPCR."""
        self.stub_sync()
        return {"v": [self.uc.reg_read(r) for r in _Q], "fpsr": self.uc.reg_read(A.UC_ARM64_REG_FPSR),
                "fpcr": self.uc.reg_read(A.UC_ARM64_REG_FPCR)}

    def load_fp(self, st: dict[str, Any]) -> None:
        self.stub_sync()
        for r, v in zip(_Q, st["v"]):
            self.uc.reg_write(r, v)
        self.uc.reg_write(A.UC_ARM64_REG_FPSR, st["fpsr"])
        self.uc.reg_write(A.UC_ARM64_REG_FPCR, st["fpcr"])

    def reset_fp(self) -> None:
        self.load_fp({"v": [0] * 32, "fpsr": 0, "fpcr": 0})

    # ---- entering EL0 --------------------------------------------------------------------------
    def enter_el0(self) -> None:
        """Drop from EL1 to EL0 with a real eret (once per CPU; hooks never change the EL)."""
        if self._at_el0:
            return
        pc = self.get_pc()
        self.cpr_write(SPSR_EL1, 0)          # EL0t, interrupts unmasked
        self.cpr_write(ELR_EL1, pc)
        before = self.counter.count
        self.counter.deadline = 2**63
        self._open_window()
        try:
            self.uc.emu_start(STUB_BASE, pc, count=1)
        except UcError as exc:
            # the eret has run; the fetch at the user entry found a not-yet-scanned page
            # (scan-on-execute), which the first run() handles
            if exc.errno != UC_ERR_FETCH_PROT or self.get_pc() != pc:
                raise
        finally:
            self._close_window()
        self.stub_insns += self.counter.count - before
        self._at_el0 = True

    def run(self, until: int) -> None:
        if not self._at_el0:
            self.enter_el0()
        # kernel stubs queued while the CPU was stopped run first: without a run of their own
        # when they can (_restart_plan; a queue of register-file saves and loads alone, as the
        # legacy policy's switches have, needs none of stub_sync's register saving either)
        if self._stub_queue and not self._restart_plan(until) and not self._regfile_front():
            self.stub_sync()
        self._guard.clear()
        super().run(until)
        if self._guard.hit:
            self._user_in_stub_page()
        if self.sve2 is not None and self.sve2.op is not None:
            self.sve2.abort()
            raise StubOverrun(f"an SVE2 unit instruction did not finish its microcode (pc {self.get_pc():#x}): "
                              f"emulator error")
        if self._pending is not None:
            self._stub_queue.clear()
            self._native_settle()                # (raises: a run cannot end inside a flush)
        if self._restart_op is not None:         # (_restart_plan made sure the run starts)
            left, self._restart_op = self._restart_op, None
            raise StubOverrun(f"kernel stub {left.name} was left for a run that never started: emulator error")
        if self._chain is not None:
            op = self._chain_op[0].name if self._chain_op else "?"
            self._chain, self._chain_op = None, None
            self._stub_queue.clear()
            self._close_window()
            raise StubOverrun(f"kernel stub {op} did not reach its closing brk within "
                              f"{self._seqs[op][1] if op in self._seqs else '?'} instructions "
                              f"(pc {self.get_pc():#x}): emulator error")

    def _restart_plan(self, until: int) -> bool:
        """The queue a CPU restarts with after a switch, without a run of its own: the FPSIMD
        saves and loads through the register file, and its one flush (the syscall flush the
        previous task queued before it blocked, or the sve_flush_p after a TIF_SVE task's load)
        entered first by the user run itself, returning natively (native/a64_stub.c) -- no
        emu_start and no bounce buffer permission change of its own.  True when it was done
        so (then run() starts at the flush); False: run the queue with :meth:`stub_sync`.

        Same result as running the queue in order: a flush writes only Z above 128 bits, P and
        FFR (V keeps its value), which an FPSIMD save does not read, so the flush may move past
        the saves; an FPSIMD load after it writes V and zeroes Z above 128, so moving the flush
        past a load leaves the same registers when the flush zeroes those bits itself
        (sve_flush_live) or they are already known zero (then the register-file load that does
        not touch them is the same as the sequence: _zhi_clean).  Every op must be at the VL the
        CPU has now and keeps (the native return does not write ZCR_EL1); when EL0 SVE is to
        trap afterwards, the native return writes CPACR_EL1 back.  The instructions must fit in
        the run's budget, so the clock, counts and the point where the run stops are those of
        running the queue first."""
        q = self._stub_queue
        if (self._ret is None or self.counter.exact or self.single_step
                or self._pending is not None or self._chain is not None):
            return False
        flush = None
        total = 0
        vl = self.vl
        for op in q:
            if op.vl != vl:
                return False
            total += op.length
            if op.regfile_load or op.regfile_save:
                if op.buf is None or not op.args:
                    return False
                off = op.args[0] - BOUNCE_BASE
                if off < 0 or off + 520 > len(op.buf) or (op.regfile_save and len(op.buf) > BOUNCE_SIZE):
                    return False
            elif flush is None and op.native:
                flush = op
            else:
                return False
        if flush is None or total >= until - self.now:
            return False
        zeroes = self._zhi_effect.get(flush.entry) == ZHI_ZERO
        if not zeroes and not self._zhi_clean and any(op.regfile_load for op in q):
            return False
        for op in q:
            if op is not flush:
                self._fpsimd_load_regs(op)
            elif op is not q[-1]:
                # the flush is accounted after the ops it moves past: its statistics' keys
                # are made here, so they keep the order a run in queue order gives them
                self.stub_stats[op.name] += 0
                self.stub_cycles[op.name] += 0
        q.clear()
        self._hw_set(True, vl)                # (the flush runs at EL0: it needs ZEN = 11)
        if self.sve_el0:
            self._zhi_clean = False           # EL0 runs next with SVE enabled
        else:
            # the next task may not use SVE: its return puts ZEN = 01 back (the
            # registers as stub_sync's closing _hw_set leaves them), before any user instruction
            self._ret.cp_ret = ctypes.addressof(self._cpacr_zen_off)
            self._hw_zen = False
            self._zhi_clean = zeroes or self._zhi_clean
        self._restart_op = flush
        return True

    def _user_in_stub_page(self) -> None:
        """User code branched into the machine's stub page: stopped by the guard before the
        first instruction there ran, it is an instruction abort, as at any address with no
        executable user mapping."""
        pc = self._guard.hit
        self._guard.clear()
        self.set_pc(pc)
        self._deliver(Trap(TrapKind.MEM_FAULT, self.arch, pc, cpu=self.index, addr=pc, access="x",
                           esr=(ESR_EC_IABT_LOW << 26) | ESR_IL))

    def _stub_in_flight(self) -> bool:
        # a stub chain begun in a hook whose mem_protect (the bounce buffer opening for a save or
        # load stub) made Unicorn end the run at the stub's first instruction: it goes on, still
        # bounded by its deadline (an overrun stops on the count and raises StubOverrun)
        # -- or the SVE2 unit's transfer (machine/sve2/xfer.py), whose transfer-page mem_protect
        # does the same when it opens and when it closes
        if self._chain is not None or self._pending is not None:
            return True
        sve2 = self.sve2
        if sve2 is not None and (sve2.op is not None or sve2.resume):
            sve2.resume = False
            return True
        return False

    def _deliver(self, trap: Trap, intr: bool = False) -> None:
        """``intr``: delivered from the INTR hook (native/a64_stub.c's entry runs after it)."""
        super()._deliver(trap)
        if self._stub_queue and self.running and not self.stop_requested and self._chain is None:
            self._chain_begin(intr)

    # ---- scan-on-execute: words the translator must not see -----------------------------------
    def _code_exits(self, page: int, data: bytes) -> list[int]:
        # fp16 words the translator aborts on; LSE atomics, whose alignment Unicorn ignores
        # (decoded once here: a rewritten page is scanned again before it runs)
        fp16 = find_aborting_words(data[:PAGE], page)
        for pc in fp16:
            self._atomics.pop(pc, None)
        return fp16 + find_atomic_words(data[:PAGE], page, self._atomics)

    # LSE atomics run inside Unicorn, not as exits.  A scanned atomic used to be an exit word:
    # every one a multi-threaded glibc executes (its locks, reference counts and cancellation
    # state: about eight per pipe round trip between two threads) stopped the run, was performed
    # here in Python and started the run again -- ~35 us where Unicorn needs nanoseconds.  What
    # Unicorn does not do is the alignment fault of a CPU without FEAT_LSE2, so each atomic word
    # gets a code hook on its own address, in the engine whose scan found it, that only tests
    # the address register: aligned (every atomic a compiler emits) it returns and Unicorn
    # performs the instruction (but for the signed min/max that Unicorn gets wrong:
    # a64_atomics.unicorn_performs_right); misaligned it stops the run before the instruction, and the run
    # loop finds the CPU at an address of _exits and takes the exit path (_exit_reached), which
    # raises the fault as before.  The counts are those of the exit path: the instruction is
    # counted once, when it retires.  On by default; EMUKERN_NATIVE_ATOMICS=0 keeps every
    # atomic an exit.  (It was opt-in while the policy study's make -j loop livelocked with it:
    # a spare engine taken for a new address space kept the old program's atomic hooks, and one
    # of them, at an address where the new program has a plain instruction, found a misaligned
    # "base" and stopped the run there on every restart.  A spare now drops them:
    # cpu_base._fresh_engine.  The study's eight programs record the same bytes either way.)
    NATIVE_ATOMICS = os.environ.get("EMUKERN_NATIVE_ATOMICS", "1") not in ("", "0")
    # The hook itself in C (native/a64_stub.c's ek_a64_atomic_check) when the native library is
    # there: it reads the base register and returns when aligned, and calls _atomic_check only
    # for a misaligned base.  A glibc thread round trip runs about eight atomics, each a Python
    # callback otherwise.  EMUKERN_C_ATOMIC_CHECK=0 keeps the Python hook.
    C_ATOMIC_CHECK = os.environ.get("EMUKERN_C_ATOMIC_CHECK", "1") not in ("", "0")

    def drop_engines(self) -> None:
        """(the counter is about to count per instruction, with its hook added after the
        atomics' hooks: their stop could no longer tell whether the atomic was counted, so the
        atomics become exits again, for the rest of the run)"""
        super().drop_engines()
        self._native_atomics = False
        hooks = self._engine_rec.local_hooks
        if hooks:
            for hh in hooks.values():
                uc_internal.hook_del_local(self.uc, hh)
            hooks.clear()
            self._exits_dirty = True
            self._flush_exits()

    def _flush_exits(self) -> None:
        if not self._exits_dirty:
            return
        if not (self.NATIVE_ATOMICS and self._native_atomics):
            super()._flush_exits()
            return
        atomics, hooks = self._atomics, self._engine_rec.local_hooks
        want = {pc for pc in self._exits if pc in atomics and unicorn_performs_right(atomics[pc])}
        fn = _native_atomic_check() if self.C_ATOMIC_CHECK and self._ret is not None else None
        for pc in [p for p in hooks if p not in want]:
            uc_internal.hook_del_local(self.uc, hooks.pop(pc))
        for pc in want:
            old = hooks.get(pc)
            if old is not None and fn is not None and isinstance(old, _AtomicHook):
                a = atomics[pc]
                if old.key != (a.rn, a.align):      # (the word there is another atomic now)
                    uc_internal.hook_del_local(self.uc, hooks.pop(pc))
                    old = None
            if old is None:
                hh = (self._atomic_hook(fn, pc, atomics[pc]) if fn is not None
                      else uc_internal.hook_code_local(self.uc, self._atomic_cb, pc, pc))
                if hh is not None:          # (refused: it stays an exit)
                    hooks[pc] = hh
        self.uc.ctl_set_exits(sorted(pc for pc in self._exits if pc not in hooks))
        self._exits_dirty = False

    def _atomic_hook(self, fn: Any, pc: int, a: Atomic) -> "_AtomicHook | None":
        """The C check (``fn``) as the code hook of the atomic ``a`` at ``pc``, in the engine in
        use only (like hook_code_local), its user_data naming a's base register and alignment;
        None when libunicorn refuses it."""
        ud = self._atomic_ud
        if ud is None:
            ud = self._atomic_ud = (_AtomicCheck * (32 * len(_ALIGN_SLOT)))()
            py = ctypes.cast(self._atomic_cb, ctypes.c_void_p).value
            for rn in range(32):
                for align, slot in _ALIGN_SLOT.items():
                    e = ud[rn * len(_ALIGN_SLOT) + slot]
                    e.py, e.reg, e.mask = py, (A.UC_ARM64_REG_SP if rn == 31 else _X[rn]), align - 1
        entry = ctypes.byref(ud, (a.rn * len(_ALIGN_SLOT) + _ALIGN_SLOT[a.align]) * ctypes.sizeof(_AtomicCheck))
        added = uc_internal.hook_code_local(self.uc, fn, pc, pc, entry)
        if added is None:
            return None
        hh = _AtomicHook(added.value)
        hh.key = (a.rn, a.align)
        return hh

    def _atomic_check(self, _uch: int, pc: int, _size: int, _ud: int) -> None:
        """The code hook of one atomic word (see above): return to let Unicorn perform it, or
        stop before it, with the count of the instructions before it."""
        try:
            a = self._atomics.get(pc)
            if a is not None:
                base = self.sp if a.rn == 31 else self._read(_X[a.rn])
                if not base % a.align:
                    return
            c = self.counter
            c.fix(pc)                   # (block counting: through pc inclusive ...)
            c.count -= 1                # (... and any counting: pc itself has not run)
            self.uc.emu_stop()
        except BaseException as exc:    # noqa: BLE001 - a ctypes callback must not raise
            uc_internal.keep_hook_exception(self.uc, exc)

    def _exit_reached(self, pc: int) -> bool:
        """An unallocated fp16 word that Unicorn would abort on: the CPU's answer to it is an
        undefined-instruction exception (EC 0x0), as qemu-aarch64 and hardware give.  An LSE
        atomic: machine/a64_atomics.py checks its alignment and performs it."""
        atomic = self._atomics.get(pc)
        if atomic is not None:
            return self._atomic(pc, atomic)
        word = self._word(pc)
        self.running = False
        if word is None:
            self._deliver(Trap(TrapKind.MEM_FAULT, self.arch, pc, cpu=self.index, addr=pc, access="x",
                               esr=(ESR_EC_IABT_LOW << 26) | ESR_IL))
        else:
            self._deliver(Trap(TrapKind.ILLEGAL, self.arch, pc, cpu=self.index, insn=word,
                               esr=(ESR_EC_UNKNOWN << 26) | ESR_IL,
                               detail="unallocated AdvSIMD fp16 encoding (refused before translation)"))
        return False

    def _atomic(self, pc: int, a: Atomic) -> bool:
        """Retire the atomic at ``pc`` (True: keep running), or deliver its alignment fault or
        data abort (False)."""
        base = self.sp if a.rn == 31 else self.reg(a.rn)
        addr = base & ((1 << 56) - 1) if not base >> 55 & 1 else base     # TBI: EL0 top byte ignored
        if base % a.align:
            self.running = False
            self._deliver(Trap(TrapKind.MEM_FAULT, self.arch, pc, cpu=self.index, addr=base,
                               access="w" if a.writes else "r", insn=self._word(pc), esr=alignment_esr(a),
                               detail=f"misaligned {a.op} of {a.align} bytes (no FEAT_LSE2): alignment fault"))
            return False
        try:
            assert self.mm is not None
            perform(a, self.mm, addr, self.reg, self.set_reg)
        except MemoryFault as exc:
            self.running = False
            wnr = (1 << 6) if exc.access == "w" else 0
            self._deliver(Trap(TrapKind.MEM_FAULT, self.arch, pc, cpu=self.index, addr=base,
                               access=exc.access, insn=self._word(pc), esr=(ESR_EC_DABT_LOW << 26) | ESR_IL | wnr))
            return False
        self.counter.count += 1         # it retires here
        self.set_pc(pc + 4)
        return True

    # ---- traps ---------------------------------------------------------------------------------
    def _counter_read(self, pc: int, word: int) -> bool:
        """The generic timer as EL0 sees it with CNTKCTL_EL1.EL0VCTEN set and EL0PCTEN clear
        (Linux's arch_timer setup): a CNTVCT_EL0/CNTFRQ_EL0 read completes in hardware (no
        kernel trap), returning emukern's clock; CNTPCT_EL0 is not accessible (see
        :meth:`classify_undef`).  Unicorn is configured with EL0 counter access off so that such
        reads raise UDEF and land here."""
        sysreg = decode_sysreg_insn(word)
        if sysreg is None or not sysreg[6]:
            return False
        enc, rt = sysreg[:5], sysreg[5]
        if enc == CNTVCT_EL0:
            value = self.clock.timer_count(self.now)
        elif enc == CNTFRQ_EL0:
            value = self.clock.timer_freq
        else:
            return False
        self.set_reg(rt, value)            # rt 31 is XZR: the value is discarded
        self.set_pc(pc + 4)
        return True

    def _undef_word(self, pc: int) -> int | None:
        """:meth:`_word` for an UNDEF's PC, read from the host buffer of the executable mapping
        the last UNDEF came from while the mm's layout is unchanged (a hot loop of emulated
        MRS traps from one mapping; the same bytes, without a mapping search per trap)."""
        mm = self.mm
        c = self._undef_map
        if c is not None and c[0] is mm and c[1] == mm.version and c[2] <= pc <= c[3]:
            o = pc - c[4]
            return int.from_bytes(c[5][o:o + 4], "little")
        word = self._word(pc)
        if word is not None and mm is not None:
            m = mm.find(pc)
            if m is not None and "x" in m.perms and m.size >= 4:
                self._undef_map = (mm, mm.version, m.start, m.end - 4, m.start - m.offset, m.buf)
        return word

    def _word(self, pc: int) -> int | None:
        """The instruction word at ``pc`` as the kernel reads it, or None when the fetch
        faults (no mapping, or one without execute permission).  Only that fault is expected
        here: anything else is a bug and propagates."""
        if self.mm is None:
            return None
        try:
            return self.mm.fetch_insn(pc)
        except MemoryFault:
            return None

    # ---- the SVE2 unit (machine/sve2/) ----------------------------------------------------------
    def _make_sve2(self, cpu_model: str, idregs: tuple[int, int] | None) -> Any:
        """The SVE2 unit, gated by the ID registers this CPU was built with: ``idregs`` =
        (ID_AA64PFR0_EL1, ID_AA64ZFR0_EL1) when the builder knows them (per-CPU overrides
        included), else those of ``cpu_model`` (machine/arm64_idregs.py)."""
        from emukern.machine.sve2.features import ID_AA64PFR0_EL1, ID_AA64ZFR0_EL1, model_idregs
        from emukern.machine.sve2.unit import Sve2Unit
        from emukern.machine.sve2.xfer import MICROCODE, MICROCODE_BYTES, XFER_BASE
        assert MICROCODE == SVE2_MICROCODE and XFER_BASE == BOUNCE_BASE
        if idregs is None:
            idregs = model_idregs(cpu_model, self.cpr_read(ID_AA64PFR0_EL1), self.cpr_read(ID_AA64ZFR0_EL1))
        self._write_fixed(MICROCODE, MICROCODE_BYTES)
        return Sve2Unit(idregs[0], idregs[1], self)

    def _sve2_execute(self, pc: int, word: int) -> bool:
        """An SVE-space word Unicorn cannot execute, with SVE on at EL0: the SVE2 unit runs it if
        the CPU has it (True: the CPU goes into the unit's microcode; the closing brk of each
        sequence comes back to :meth:`_sve2_brk`)."""
        unit = self.sve2
        assert unit is not None
        insn = unit.decode(word)
        if insn is None:
            unit.check_unimplemented(word)
            return False
        unit.begin(pc, word, insn)
        return True

    def _sve2_brk(self, intno: int, pc: int) -> None:
        assert self.sve2 is not None
        word = self.sve2.on_brk(intno, pc)
        if word is not None:        # unallocated inside its class: UNDEF at the instruction
            self._deliver(self.classify_undef(self.get_pc(), word))

    def classify_undef(self, pc: int, word: int) -> Trap:
        """Work out the syndrome an EL0 undefined-instruction exception would have had."""
        if is_sve_encoding(word) and self.has_sve and not self.sve_el0:
            return Trap(TrapKind.SVE_ACCESS, self.arch, pc, cpu=self.index, insn=word,
                        esr=(ESR_EC_SVE << 26) | ESR_IL)
        sysreg = decode_sysreg_insn(word)
        if sysreg is not None and sysreg[6] and sysreg[:5] == CNTPCT_EL0:
            # CNTKCTL_EL1.EL0PCTEN clear: the physical counter read traps with EC 0x18
            return Trap(TrapKind.SYSREG, self.arch, pc, cpu=self.index, insn=word,
                        esr=(ESR_EC_SYS64 << 26) | ESR_IL | sysreg_iss(*sysreg))
        if sysreg is not None and self.idst:
            op0, op1, crn, crm, op2, rt, is_read = sysreg
            # FEAT_IDST: EL0 reads of the ID space report EC 0x18 instead of UNDEFINED
            if is_read and op0 == 3 and op1 == 0 and crn == 0:
                return Trap(TrapKind.SYSREG, self.arch, pc, cpu=self.index, insn=word,
                            esr=(ESR_EC_SYS64 << 26) | ESR_IL | sysreg_iss(*sysreg))
        return Trap(TrapKind.ILLEGAL, self.arch, pc, cpu=self.index, insn=word,
                    esr=(ESR_EC_UNKNOWN << 26) | ESR_IL)

    def _syscall_word(self, epc: int) -> int:
        """The svc instruction's word (its #imm16 is in the syndrome), read from the host buffer of
        one of the last two executable mappings syscalls came from while the mm's layout is
        unchanged: the same bytes :meth:`_word` reads, without a mapping search on every syscall.
        (Two: a signal round trip alternates between the program's svc and the sigreturn
        trampoline's in the [vdso] page, and one entry missed on every syscall.)"""
        mm = self.mm
        for c in self._svc_map:
            if c[2] <= epc <= c[3] and c[0] is mm and c[1] == mm.version:
                # (unpack_from reads the word in place: a third of a slice + int.from_bytes)
                return _U32_AT(c[5], epc - c[4])[0]
        if mm is not None:
            m = mm.find(epc)
            if m is not None and "x" in m.perms and m.size >= 4:
                self._svc_map = ((mm, mm.version, m.start, m.end - 4, m.start - m.offset, m.buf),
                                 *self._svc_map[:1])
        return self._word(epc) or 0

    def syscall_trap(self, pc: int, word: int, regs: Any) -> Trap:
        """An svc from EL0: EC 0x15 with the immediate in the ISS."""
        return Trap(TrapKind.SYSCALL, self.arch, pc, cpu=self.index, insn=word,
                    esr=(ESR_EC_SVC64 << 26) | ESR_IL | ((word >> 5) & 0xFFFF))

    def _svc(self) -> None:
        """EXCP_SWI (svc, the PC already past it) from the general INTR callback, where
        ek_a64_intr's svc callback (:meth:`_svc_entry`, the hot path) is not installed: the PC
        and x8, x0..x5 in one libunicorn call, delivered as numbers (no Trap object)."""
        if self._pending is not None:
            self._native_settle()
        if self._chain is not None:
            self._hook_intr(self.uc, 2, None)        # inside a kernel stub: an emulator error
            return
        self._syscall_exc()
        # as _deliver: kernel stubs the syscall's entry/exit work queued run before the user
        if self._stub_queue and self.running and not self.stop_requested and self._chain is None:
            self._chain_begin(True)

    def _hook_intr_native(self) -> bool:
        """Make native/a64_stub.c's ek_a64_intr this CPU's INTR hook, in the place the Python
        callback of :meth:`Cpu.hook_intr` would take (after the counter's, before
        ek_a64_stub_enter): an svc goes to :meth:`_svc_entry`'s callback with its registers
        already read, every other exception to :meth:`_hook_intr` through the same one-frame
        guard hook_intr makes.  False when the library is unavailable (a pure-Python counter or
        no C compiler): the caller registers the Python callback instead."""
        ret = self._ret
        fn = _native_svc_intr() if ret is not None else None
        if fn is None or ret is None:
            return False
        uc = self.uc
        keep = uc_internal.keep_hook_exception
        hook = self._hook_intr

        def entry(_handle: int, intno: int, _ud: int | None) -> None:
            try:
                hook(uc, intno, None)
            except BaseException as exc:
                keep(uc, exc)
        s = _SvcEntry()
        s.ids[:] = [A.UC_ARM64_REG_PC, _X[8], *_X[0:6]]
        s.ret = ctypes.addressof(ret)
        cb = uc_internal.INTR_CFUNC(entry)
        cb_svc = _SVC_CFUNC(self._svc_entry(s))
        s.py = ctypes.cast(cb, ctypes.c_void_p).value
        s.py_svc = ctypes.cast(cb_svc, ctypes.c_void_p).value
        status, _hh = uc_internal.hook_add_native(uc, UC_HOOK_INTR, fn, ctypes.cast(ctypes.pointer(s), ctypes.c_void_p))
        if status != 0:
            raise UcError(status)
        self._intr_cbs.append((cb, cb_svc, s))     # (the callbacks and the struct outlive the hook)
        self._svc_s = s
        return True

    def _svc_entry(self, s: _SvcEntry) -> Any:
        """The callback ek_a64_intr calls for an svc, its registers (the PC past the svc, x8,
        x0..x5) already in ``s.sys``: :meth:`_svc` and :meth:`Cpu._syscall_exc` in one frame,
        without the general callback's dispatch on the exception number and without the ctypes
        register read.  The same steps in the same order: the settling of the last syscall's
        native flush, the chain check, the delivery to ``on_syscall`` with the same marks (or as
        a Trap without it), _trap_done's two steps, the start of the queued kernel stubs.  A
        change to _svc or _syscall_exc is made here too (as cpu_riscv's ecall entry)."""
        regs_of = functools.partial(_SVC_REGS.unpack_from, s, _SVC_REGS_AT)
        uc = self.uc
        keep = uc_internal.keep_hook_exception
        cs = self._cs
        hook = self._hook_intr
        word_of = self._syscall_word

        def svc_entry() -> None:
            try:
                regs = regs_of()
                op = self._pending
                if op is not None:
                    # the last syscall's flush, returned natively: _native_settle, inline, on what
                    # the C hook read (its count, or all ones: still armed or in flight)
                    n = regs[8]
                    if n != op.length:
                        self._native_settle()                # (raises)
                    self._pending = None
                    self.stub_insns += n
                    self.stub_stats[op.name] += 1
                    self.stub_cycles[op.name] += n
                if self._chain is not None:
                    hook(uc, 2, None)                        # inside a kernel stub: an emulator error
                    return
                pc = regs[0] - 4
                # _syscall_word's newest mapping, inline (the loop's own hit, without its frame)
                sm = self._svc_map
                c0 = sm[0] if sm else _NO_SVC_MAP
                mm = self.mm
                if c0[2] <= pc <= c0[3] and c0[0] is mm and c0[1] == mm.version:
                    word = _U32_AT(c0[5], pc - c0[4])[0]
                else:
                    word = word_of(pc)
                on_syscall = self.on_syscall
                if on_syscall is None:
                    self._deliver(self.syscall_trap(pc, word, regs[1:8]))
                else:
                    self.traps_seen += 1
                    c = cs.count            # the marks, as _syscall_exc computes them
                    eu = self.extra_user
                    on_syscall(self, pc, word, regs[1:8], c + eu + self.sys_cycles + self.idle_cycles,
                               c - self.stub_insns + eu)
                    # _trap_done, inline
                    charged = self.extra_user + self.sys_cycles + self.idle_cycles
                    delta = charged - self._committed
                    if delta:
                        self._committed = charged
                        if self.running:
                            d = cs.deadline - delta
                            cs.deadline = d if d > 0 else 0
                    if self.scan_code:
                        mm = self.mm
                        if mm is not None and mm.code_gen != self._code_gen and mm.version == self.mapped_version:
                            self._reset_code_view()
                # as _deliver: kernel stubs the syscall's entry/exit work queued run before the user
                if self._stub_queue and self.running and not self.stop_requested and self._chain is None:
                    self._chain_begin(True)
            except BaseException as exc:
                keep(uc, exc)
        return svc_entry

    def _hook_intr(self, uc: Uc, intno: int, _ud: Any) -> None:
        if self._pending is not None:
            self._native_settle()
        if intno == 2 and self._chain is None:
            self._svc()
            return
        pc = self._read(A.UC_ARM64_REG_PC)      # (get_pc, one frame less: every stub's brk)
        if self._chain is not None:
            name = self._chain_op[0].name if self._chain_op else "?"
            op = self._chain_op[0] if self._chain_op else None
            if intno == 7 and op is not None and pc == op.entry + 4 * (op.length - 1):
                self._chain_step()      # the brk #0xe4e ending a kernel stub
                return
            raise StubOverrun(f"exception {intno} at {pc:#x} inside kernel stub {name}: emulator error")
        sve2 = self.sve2
        if sve2 is not None and sve2.op is not None:
            self._sve2_brk(intno, pc)       # the end of one of the SVE2 unit's microcode runs
            return
        if intno == 1 and (self._fault is not None or (self._fault_pending is not None and self._fault_pending())):
            # An earlier instruction of this block already faulted inside a Unicorn helper (an
            # SVE scatter that probed an unmapped page records the fault and lets the block run
            # on): the fault is what the guest sees, and Unicorn stops with it after this hook.
            # Starting the SVE2 unit (or an UNDEF) here would bury it under a second exception.
            self.uc.emu_stop()
            return
        if intno == 2:      # EXCP_SWI: svc, PC already past it
            epc = pc - 4
            svc = self._word(epc) or 0
            self._deliver(Trap(TrapKind.SYSCALL, self.arch, epc, cpu=self.index, insn=svc,
                               esr=(ESR_EC_SVC64 << 26) | ESR_IL | ((svc >> 5) & 0xFFFF)))
            return
        word = self._undef_word(pc) if intno == 1 else self._word(pc)
        if word is None:
            self._deliver(Trap(TrapKind.MEM_FAULT, self.arch, pc, cpu=self.index, addr=pc, access="x",
                               esr=(ESR_EC_IABT_LOW << 26) | ESR_IL))
            return
        if intno == 1:      # EXCP_UDEF
            known = self._undef_syndrome.get(word)
            if known is not None:
                # seen before (e.g. an emulated MRS in a loop): neither a counter read nor an SVE
                # word, so the syndrome classify_undef worked out then is the syndrome now
                # (positional: kind, arch, pc, cpu, insn, insn_size, cause, tval, esr -- a third
                # cheaper than by keyword, on the path of every emulated MRS)
                self._deliver(Trap(known[0], self.arch, pc, self.index, word, 4, None, None, known[1]))
                return
            if self._counter_read(pc, word):
                return
            if self.sve2 is not None and self.sve_el0 and is_sve_encoding(word) and self._sve2_execute(pc, word):
                return
            trap = self.classify_undef(pc, word)
            if not is_sve_encoding(word):
                # (an SVE word's syndrome depends on CPACR_EL1.ZEN and the SVE2 unit: not kept)
                assert trap.esr is not None and not trap.detail
                self._undef_syndrome[word] = (trap.kind, trap.esr)
            self._deliver(trap, True)
            return
        if intno == 7:      # EXCP_BKPT: brk #imm
            self._deliver(Trap(TrapKind.BREAKPOINT, self.arch, pc, cpu=self.index, insn=word,
                               esr=(ESR_EC_BRK64 << 26) | ESR_IL | ((word >> 5) & 0xFFFF)))
            return
        self._deliver(Trap(TrapKind.ILLEGAL, self.arch, pc, cpu=self.index, insn=word,
                           esr=(ESR_EC_UNKNOWN << 26) | ESR_IL, detail=f"unexpected exception {intno}"))

    def _trap_from_error(self, exc: UcError) -> Trap:
        pc = self.get_pc()
        if self._fault is not None:
            addr, access = self._fault
            ec = ESR_EC_IABT_LOW if access == "x" else ESR_EC_DABT_LOW
            wnr = (1 << 6) if access == "w" else 0
            return Trap(TrapKind.MEM_FAULT, self.arch, pc, cpu=self.index, addr=addr, access=access,
                        esr=(ec << 26) | ESR_IL | wnr, insn=self._word(pc))
        word = self._word(pc)
        return Trap(TrapKind.ILLEGAL, self.arch, pc, cpu=self.index, insn=word,
                    esr=(ESR_EC_UNKNOWN << 26) | ESR_IL, detail=str(exc))

    # ---- the vector state, for tests and tools -------------------------------------------------
    # What the CPU holds right now (after a run, or from a debugger hook), after any queued kernel
    # stubs.  Z above 128 bits, P0-P15 and FFR can only be reached with SVE instructions, so they
    # are read and written with the kernel's own sve_save_state/sve_load_state sequences, run
    # without a trace on the clock -- the path the debugger's `info zregs` takes.  Their buffer
    # layout is the kernel's, so the kernel that boots this CPU hands the two functions over here
    # (Arm64Arch.make_cpu: entry_fpsimd.read_sve_state and write_sve_state); the machine imports
    # nothing of the kernel.
    sve_state_access: "tuple[Any, Any] | None" = None

    def _sve_access(self) -> "tuple[Any, Any]":
        if not self.has_sve:
            raise ValueError("this CPU has no SVE (the machine was built with sve=False)")
        if self.sve_state_access is None:
            raise ValueError("no kernel installed its SVE save/load sequences on this CPU: boot a "
                             "kernel on it (emukern.api.Machine, or Kernel(config)) first")
        return self.sve_state_access

    def sve_state(self) -> dict[str, Any]:
        """Every SVE register at once: ``{"vl": bits, "z": [32 x VL/8 bytes], "p": [16 x VL/64
        bytes], "ffr": VL/64 bytes, "fpsr": int, "fpcr": int}``, bytes little-endian, element 0
        first (one save sequence: cheaper than 49 single reads)."""
        return dict(self._sve_access()[0](self))

    def sve_z(self, n: int) -> bytes:
        """``Z<n>`` (0-31): VL/8 bytes, element 0 first.  Its first 16 bytes are ``V<n>``."""
        if not 0 <= n < 32:
            raise ValueError(f"no SVE register z{n}")
        return bytes(self.sve_state()["z"][n])

    def sve_p(self, n: int) -> bytes:
        """Predicate ``P<n>`` (0-15): VL/64 bytes, one bit per vector byte (bit ``i*esize`` is
        element ``i``'s for elements of ``esize`` bytes), as ``str p`` stores it."""
        if not 0 <= n < 16:
            raise ValueError(f"no SVE predicate p{n}")
        return bytes(self.sve_state()["p"][n])

    def sve_ffr(self) -> bytes:
        """The first-fault register: VL/64 bytes in the layout of :meth:`sve_p`."""
        return bytes(self.sve_state()["ffr"])

    @property
    def sve_vl(self) -> int:
        """The vector length in bits (ZCR_EL1.LEN), the length the accessors read and write at.
        Linux's prctl(PR_SVE_GET_VL) gives it in bytes: ``sve_vl // 8``."""
        return int(self.vl)

    def _sve_put(self, key: str, n: int, data: bytes, size: int) -> None:
        if len(data) != size:
            raise ValueError(f"{key}{'' if n < 0 else n} takes {size} bytes at VL {self.vl}, not {len(data)}")
        st = self.sve_state()
        if n < 0:
            st[key] = bytes(data)
        else:
            regs = list(st[key])
            regs[n] = bytes(data)
            st[key] = regs
        self._sve_access()[1](self, st)

    def set_sve_z(self, n: int, data: bytes) -> None:
        """Write ``Z<n>`` (VL/8 bytes); the other registers keep their values."""
        if not 0 <= n < 32:
            raise ValueError(f"no SVE register z{n}")
        self._sve_put("z", n, data, self.vl // 8)

    def set_sve_p(self, n: int, data: bytes) -> None:
        """Write ``P<n>`` (VL/64 bytes, the layout of :meth:`sve_p`)."""
        if not 0 <= n < 16:
            raise ValueError(f"no SVE predicate p{n}")
        self._sve_put("p", n, data, self.vl // 64)

    def set_sve_ffr(self, data: bytes) -> None:
        """Write FFR (VL/64 bytes)."""
        self._sve_put("ffr", -1, data, self.vl // 64)
