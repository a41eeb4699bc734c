"""What every simulated CPU has in common: a Unicorn instance, an exact instruction counter, a
local clock, memory attachment and the in-hook trap delivery protocol.

Trap protocol: the architecture subclass turns a Unicorn event into a :class:`Trap` and calls
``self.on_trap(cpu, trap)`` — the kernel's entry point.  That happens *inside* the Unicorn hook
when possible (resuming costs ~1 µs instead of ~14 µs for stop+restart).  The kernel sets the
registers/PC it wants and either returns (the guest continues) or calls :meth:`Cpu.stop` (the
scheduler needs the CPU: a block, an exit, a context switch).  A syscall instruction, the
commonest trap, goes to ``self.on_syscall(cpu, pc, insn, (nr, args...), now, ucount)`` instead when the kernel
sets it (:meth:`Cpu._syscall_exc`): no Trap object on that path; :meth:`Cpu.syscall_trap` builds
the equivalent Trap for whoever asks.

Scan-on-execute (``scan_code``): some instruction words must never reach Unicorn's translator —
on arm64 the unallocated AdvSIMD fp16 encodings that abort the host process inside QEMU, on
RISC-V the cycle/instret CSR reads that would return host ticks.  QEMU-user's way of following
self-modifying code gives the hook: in Unicorn's view of guest memory a page is executable only
after emukern has scanned it, and a scanned page that the guest may write is mapped
non-writable.  So

* the first fetch from a guest-executable page faults (UC_ERR_FETCH_PROT, before translation):
  the page is scanned, every word found becomes a Unicorn *exit* (``UC_CTL_UC_EXITS``: the
  translator ends the block before that address instead of decoding it), the page becomes
  executable (and read-only), and the run resumes at the same PC;
* a guest store to a scanned page faults (UC_ERR_WRITE_PROT): the page goes back to writable
  and non-executable (its translations and exits dropped) and the store is retried; the next
  fetch scans it again;
* a kernel write to executable memory (``AddressSpace.code_gen``) resets the whole view;
* other CPUs sharing the address space keep a page some CPU holds executable write-protected
  (``AddressSpace.scanned``); a store there resets the holders' views before they run again;
* a run that stops at an exit hands the word to the architecture (:meth:`_exit_reached`).

Nothing is added to the per-instruction path: the cost is one fault per 64 KiB block of code
executed (per CPU and address space), a scan of each page, and an emu_start per executed exit
word (measured: ~3.6 us more per rdcycle in a tight loop).
"""

from __future__ import annotations

import ctypes
import functools
import mmap
import os
import struct
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from unicorn.unicorn_const import (UC_ERR_FETCH_PROT, UC_ERR_WRITE_PROT, UC_HOOK_MEM_INVALID, UC_PROT_EXEC,
                                   UC_PROT_READ, UC_PROT_WRITE)

from emukern.machine.clock import Clock
from emukern.machine.counter import make_counter
from emukern.machine.memory import _ACCESS_LIMIT, PAGE, AddressSpace, engine_regions, uc_prot
from emukern.machine.trap import Trap
from emukern.machine import regs, uc_internal
from emukern.machine.uc_internal import Uc, UcError

TrapHandler = Callable[["Cpu", Trap], None]
# on_syscall(cpu, pc, word, regs, now, ucount): a syscall instruction at ``pc`` (``word``: its
# encoding where the syndrome needs it, arm64's svc #imm) with ``regs`` = (number, arg0..arg5) as
# one tuple, and the CPU's marks at the trap (Cpu.marks: its time and its user cycles)
SyscallHandler = Callable[["Cpu", int, int, tuple[int, ...], int, int], None]

# unicorn.unicorn_const access types for UC_HOOK_MEM_INVALID
_ACCESS = {19: "r", 20: "w", 21: "x", 22: "w", 23: "r", 24: "x"}  # UNMAPPED (19-21); PROT: WRITE 22, READ 23, FETCH 24
# the same accesses as uc_emu_start's errors (read/write/fetch of unmapped memory 6-8; WRITE_PROT
# 12, READ_PROT 13, FETCH_PROT 14), for a CPU that reads the faulting address from the engine
_ERR_ACCESS = {6: "r", 7: "w", 8: "x", 12: "w", 13: "r", 14: "x"}
UNTIL_NEVER = 0xFFFF_FFFF_FFFF_FFF0

# Unicorn reserves a 1 GiB translated-code buffer per instance by default, so seven CPUs already
# need 7 GiB of address space.  Guest code in emukern is small (a static glibc program translates
# to a few MiB); 32 MiB per CPU puts 64 CPUs at 2 GiB.  When it fills, Unicorn flushes it and
# retranslates (slower, never wrong).
TB_BUFFER_SIZE = 32 << 20
_TB_PROBE_SLACK = 16 << 20      # Unicorn's other per-instance allocations come on top
SCAN_CHUNK = 64 << 10           # scan-on-execute makes up to this much executable per fault


def _counter_args(uc: Uc) -> tuple[int, bool, bool]:
    """What the block counter needs to know of the architecture: the PC's register id, whether
    instructions are 2 or 4 bytes long, and whether the INTR hook sees the PC after the trapping
    instruction (RISC-V: measured, see cpu_riscv) rather than at it (AArch64 UDF/BRK)."""
    from unicorn import UC_ARCH_RISCV
    if uc.ctl_get_arch() == UC_ARCH_RISCV:
        return regs.RISCV64_PC, True, True
    return regs.ARM64_PC, False, False


def _page_runs(pages: dict[int, Any]) -> list[tuple[int, int]]:
    """The page addresses as sorted [lo, hi) runs of consecutive pages."""
    runs: list[tuple[int, int]] = []
    for page in sorted(pages):
        if runs and runs[-1][1] == page:
            runs[-1] = (runs[-1][0], page + PAGE)
        else:
            runs.append((page, page + PAGE))
    return runs


def _no_syscall_batch() -> Any:
    """Cpu._sys_fill/_sys_get until the architecture makes its syscall batch."""
    raise RuntimeError("this CPU has no syscall register batch")


def _reg_slots(regids: Sequence[int], width: int | None = None) -> tuple[Any, Any, Any]:
    """The three arrays a libunicorn register batch call takes for ``regids``: the value
    buffer (64-bit slots; with ``width``, raw bytes, ``width`` a register), a pointer to each
    register's place in it, and the register ids."""
    n = len(regids)
    step = 8 if width is None else width
    buf: Any = (ctypes.c_uint64 * n)() if width is None else (ctypes.c_char * (n * width))()
    ptrs = (ctypes.c_void_p * n)(*[ctypes.addressof(buf) + step * i for i in range(n)])
    ids = (ctypes.c_int * n)(*regids)
    return buf, ptrs, ids


class _Engine:
    """One of a CPU's Unicorn engines and what the CPU knows of its view: the address space it
    serves (weakly: a dead mm's engine is closed or reused), the regions mapped in it, its
    scan-on-execute state, and the counter's split hooks that live in it."""

    __slots__ = ("handle", "mm", "mapped", "mapped_version", "xpages", "exits", "exits_dirty", "foreign",
                 "scan_gen", "code_gen", "splits", "local_hooks", "redecoded", "redecoded_gen",
                 "count_view")

    def __init__(self, handle: int) -> None:
        self.handle = handle
        self.mm: weakref.ref[AddressSpace] | None = None
        self.mapped: list[tuple[int, int, int, int]] = []
        self.mapped_version = -1
        self.xpages: dict[int, tuple[int, ...]] = {}
        self.exits: set[int] = set()
        self.exits_dirty = False
        self.foreign: set[int] = set()
        self.scan_gen = -1
        self.code_gen = 0
        self.splits: tuple[int, list[tuple[int, int]], int | None] = (0, [], None)
        # hooks the architecture keeps in this engine alone, by address (arm64: its atomics)
        self.local_hooks: dict[int, Any] = {}
        # page -> the scan memo's entry (Cpu._scan_memo) that _redecode last found holding this
        # engine's bytes of that page; see Cpu._redecode
        self.redecoded: dict[int, Any] = {}
        # the CPU's _memo_gen when a _redecode pass with ``redecoded`` last ended (-1: none)
        self.redecoded_gen = -1
        # the counter's cache of this engine's block counts (Counter.view): its RISC-V counts
        # stay good while it waits; None for an engine with no code counted yet
        self.count_view: Any = None

    def serves(self) -> AddressSpace | None:
        """The live address space this engine is kept for (None: none, or it was released)."""
        mm = self.mm() if self.mm is not None else None
        return None if mm is None or mm.released else mm


def new_uc(arch: int, mode: int, what: str) -> Uc:
    """A Unicorn instance with emukern's translation-buffer size.

    QEMU inside Unicorn ends the *whole process* (``exit(1)`` after "Could not allocate dynamic
    translator buffer") when the host refuses that buffer, so the same amount of address space is
    asked for first, here, where a refusal can become a clear error."""
    from emukern.errors import ConfigError
    uc = Uc(arch, mode)
    uc_internal.EngineSet(uc, arch, mode)       # (this CPU may get more engines: see attach_mm)
    uc_internal.configure(uc, "ctl_set_tcg_buffer_size", TB_BUFFER_SIZE)
    try:
        probe = mmap.mmap(-1, TB_BUFFER_SIZE + _TB_PROBE_SLACK, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    except OSError as exc:
        raise ConfigError(f"cannot create {what}: the host refused {(TB_BUFFER_SIZE + _TB_PROBE_SLACK) >> 20} MiB "
                          f"for its translated-code buffer ({exc.strerror})",
                          hint="use fewer --cpus, or raise the address-space limit (ulimit -v)") from None
    probe.close()
    return uc


class Cpu:
    arch: str = ""
    insn_align: int = 4
    scan_code = False        # scan-on-execute (see the module docstring)
    # the scan keeps per-address decodes besides the exit words (arm64's LSE atomics), which an
    # engine taken again must redo (_redecode); False where _code_exits is a pure function of
    # the page's bytes, so a switch between processes skips that pass over the scanned pages
    decodes_per_address = True

    def __init__(self, index: int, clock: Clock, uc: Uc) -> None:
        self.index = index
        self.clock = clock
        self.uc = uc
        self.counter = make_counter(uc, *_counter_args(uc))
        # what holds the live count: the ctypes struct itself for the native counter (reading
        # its field directly skips a property call on the hottest path), else the counter
        self._cs = getattr(self.counter, "_s", self.counter)
        self.extra_user = 0       # user cycles beyond one per instruction (e.g. long vector ops)
        self.sys_cycles = 0       # kernel work charged by the cost model
        self.idle_cycles = 0
        self.stub_insns = 0       # instructions executed in kernel stubs (counted by the counter)
        self.mm: AddressSpace | None = None
        self._mapped: list[tuple[int, int, int, int]] = []
        self.mapped_version = -1   # public (read-only for others): mm.version Unicorn maps now
        self.on_trap: TrapHandler | None = None
        # The kernel's syscall entry, when it has one: a syscall (the commonest trap by far) is
        # then delivered as plain numbers, and the kernel builds the Trap (syscall_trap) only
        # when something asks for it.  None: syscalls arrive through on_trap like every trap.
        self.on_syscall: SyscallHandler | None = None
        self.running = False
        self.stop_requested = False
        self._fault: tuple[int, str] | None = None
        self.traps_seen = 0
        # software step armed for the user context (arm64 MDSCR_EL1.SS with SPSR.SS set: the
        # kernel's single-step of a ptraced task); part of the saved user context
        self.single_step = False
        self._stepping = False
        self._committed = 0        # charged cycles already reflected in the counter deadline
        # Register access straight through libunicorn (the binding's generic path costs ~2x),
        # through function pointers of their own without ctypes argtypes: every argument is
        # passed already in its C form (the handle a c_void_p, pointers as byref/arrays, ids and
        # counts as C ints), and the per-call argtypes conversion — measured at half of a
        # uc_reg_write and two thirds of an 8-register uc_reg_read_batch here — is skipped
        # (uc_internal: the one module that reaches into the binding for these)
        self._engine = uc_internal.handle(uc)
        # (with the GIL held across them: they return at once and run no hook)
        self._uc_rr = uc_internal.raw_fn("uc_reg_read", keep_gil=True)
        self._uc_rw = uc_internal.raw_fn("uc_reg_write", keep_gil=True)
        self._uc_rrb = uc_internal.raw_fn("uc_reg_read_batch", keep_gil=True)
        self._uc_rwb = uc_internal.raw_fn("uc_reg_write_batch", keep_gil=True)
        # uc_emu_start the same way (see _emu_start)
        self._start = uc_internal.emu_starter(uc, UNTIL_NEVER)
        # batch_reader/batch_writer: (id(register tuple), kind) -> (the tuple, kind, the C-call
        # closure); the kind is in the key, so a reader and a writer of one tuple coexist
        self._batches: dict[tuple[int, Any], tuple[tuple[int, ...], Any, Callable[..., Any]]] = {}
        self._rv = ctypes.c_uint64()
        self._batch_keep: list[Any] = []     # buffers of make_batch_parts' partials
        self._sys_fill: Callable[[], Any] = _no_syscall_batch     # see _syscall_exc (set by the
        self._sys_get: Callable[[], tuple[int, ...]] = _no_syscall_batch   # architecture)
        self._prv = ctypes.byref(self._rv)
        # The faulting address of an access Unicorn refuses: from this hook, until the
        # architecture moves to a TLB fill whose data entries cannot serve fetches
        # (_faults_from_engine), which is only worth it without any memory hook
        self._invalid_hook = uc_internal.hook_add_py(uc, UC_HOOK_MEM_INVALID, self._hook_mem_invalid)
        self._fault_address: Callable[[], int] | None = None
        self._fault_pending: Callable[[], bool] | None = None
        self._intr_cbs: list[Any] = []
        self._fault_type = 0
        self._xpages: dict[int, tuple[int, ...]] = {}   # scanned (executable) page -> its exits
        self._exits: set[int] = set()
        self._exits_dirty = False
        self._code_gen = 0
        self._foreign: set[int] = set()   # pages other CPUs scanned: write-protected here
        self._scan_gen = -1
        # scan state of the address spaces this CPU switched away from (see _leave_mm): their
        # pages stay held in mm.scanned, so a store by any CPU or a kernel write bumps code_gen
        # and tells us the parked state is stale
        self._parked: weakref.WeakKeyDictionary[AddressSpace, tuple[dict[int, tuple[int, ...]], int, int]] = \
            weakref.WeakKeyDictionary()
        self._scan_memo: dict[int, tuple[bytes, tuple[int, ...]]] = {}    # see _scan_bytes
        self._memo_gen = 0          # bumped whenever an entry of _scan_memo is replaced or dropped
        # Engines per address space (see attach_mm): the engine in use first, then the others
        # from the least recently used; engines of dead address spaces wait in _spare for reuse
        es = uc_internal.engines(uc)
        self._es = es
        self._engine_rec = _Engine(es.current if es is not None else 0)
        self._kept: dict[int, _Engine] = {}       # id(mm) -> its engine, least recently used first
        self._spare: list[_Engine] = []
        if hasattr(self.counter, "before_rehook"):
            self.counter.before_rehook = self.drop_engines
        self.engine_switches = 0       # switch_mm that changed engine (statistics)
        self.engines_made = 0
        self.code_scans = 0        # pages scanned (statistics)
        self.exit_stops = 0        # runs stopped at an exit word
        if self.scan_code:
            uc_internal.configure(uc, "ctl_exits_enabled", True)
            uc_internal.configure(uc, "ctl_set_exits", [])

    # ---- fast register access ------------------------------------------------------------------
    def _read(self, regid: int) -> int:
        self._uc_rr(self._engine, regid, self._prv)
        return self._rv.value

    def _write(self, regid: int, value: int) -> None:
        self._rv.value = value & 0xFFFF_FFFF_FFFF_FFFF
        self._uc_rw(self._engine, regid, self._prv)

    # Public, for the kernel's hot paths (a syscall's return value, a signal frame's registers):
    # a 64-bit register by its Unicorn id in one libunicorn call (the same function, no wrapper)
    write_regid = _write

    def batch_reader(self, regids: tuple[int, ...]) -> Callable[[], list[int]]:
        """:meth:`make_batch`, made once per CPU for each register tuple (cached by the tuple's
        identity: pass a module-level constant)."""
        ent = self._batches.get((id(regids), "r"))
        if ent is None or ent[0] is not regids:
            ent = self._batches[(id(regids), "r")] = (regids, "r", self.make_batch(regids))
        return ent[2]

    def batch_reader_raw(self, regids: tuple[int, ...], width: int) -> Callable[[], bytes]:
        """:meth:`make_batch_raw`, cached per CPU like :meth:`batch_reader`."""
        ent = self._batches.get((id(regids), width))
        if ent is None or ent[0] is not regids:
            ent = self._batches[(id(regids), width)] = (regids, width, self.make_batch_raw(regids, width))
        return ent[2]

    def batch_writer(self, regids: tuple[int, ...]) -> Callable[[Sequence[int]], None]:
        """:meth:`make_batch_writer`, cached per CPU like :meth:`batch_reader`."""
        ent = self._batches.get((id(regids), "w"))
        if ent is None or ent[0] is not regids:
            ent = self._batches[(id(regids), "w")] = (regids, "w", self.make_batch_writer(regids))
        return ent[2]

    def batch_writer_raw(self, regids: tuple[int, ...]) -> Callable[[bytes], None]:
        """:meth:`make_batch_writer_raw`, cached per CPU like :meth:`batch_reader`."""
        ent = self._batches.get((id(regids), "wr"))
        if ent is None or ent[0] is not regids:
            ent = self._batches[(id(regids), "wr")] = (regids, "wr", self.make_batch_writer_raw(regids))
        return ent[2]

    def make_batch(self, regids: Sequence[int]) -> Callable[[], list[int]]:
        """A reader for a fixed list of 64-bit registers in one libunicorn call."""
        n = len(regids)
        buf, ptrs, ids = _reg_slots(regids)
        rrb, uch = self._uc_rrb, self._engine
        unpack = struct.Struct(f"<{n}Q").unpack_from    # half the time of buf[:] (measured)

        def read() -> list[int]:
            rrb(uch, ids, ptrs, n)
            return list(unpack(buf))
        read.keep = (buf, ptrs, ids)  # type: ignore[attr-defined]
        return read

    def make_batch_parts(self, regids: Sequence[int]) -> tuple[Callable[[], Any], Callable[[], tuple[int, ...]]]:
        """:meth:`make_batch` as two C-level callables, for the trap hooks: ``fill()`` reads the
        registers into a buffer (one libunicorn call), ``get()`` returns them as a tuple.  Both
        are partials of C functions, so reading costs no Python frame."""
        n = len(regids)
        buf, ptrs, ids = _reg_slots(regids)
        fill = functools.partial(self._uc_rrb, self._engine, ids, ptrs, n)
        get = functools.partial(struct.Struct(f"<{n}Q").unpack_from, buf)
        self._batch_keep.append((buf, ptrs, ids))
        return fill, get

    def _make_ctx_batch(self, regids: Sequence[int]) -> tuple[Callable[[], tuple[int, ...]], Callable[[], Any],
                                                             Any]:
        """The context switch's register batch: ``read()`` (one libunicorn call, the values as a
        tuple), ``write()`` (one libunicorn call of what the buffer holds) and the buffer itself
        (a ctypes array of 64-bit slots, filled by the caller before ``write``).  One buffer
        serves both ways: a switch reads the outgoing task's registers and writes the incoming
        one's, never both at once.  The write is a partial of the C function (no Python frame);
        a PC among the registers must be followed by ``counter.pc_written()`` as :meth:`set_pc`
        does."""
        n = len(regids)
        buf, ptrs, ids = _reg_slots(regids)
        fill = functools.partial(self._uc_rrb, self._engine, ids, ptrs, n)
        unpack = functools.partial(struct.Struct(f"<{n}Q").unpack_from, buf)
        write = functools.partial(self._uc_rwb, self._engine, ids, ptrs, n)
        self._batch_keep.append((buf, ptrs, ids))

        def read() -> tuple[int, ...]:
            fill()
            return unpack()
        return read, write, buf

    def reg_write_parts(self, regid: int) -> tuple[ctypes.c_uint64, Callable[[], Any]]:
        """A 64-bit register write in two steps, for the kernel's hot paths (a syscall's return
        value): ``slot.value = v`` holds the value (its low 64 bits, as :meth:`_write` masks
        it), then ``write()`` puts it in the register (one libunicorn call, a partial of the C
        function: no Python frame).  Not for the PC (a PC write must also tell the counter:
        :meth:`set_pc`)."""
        if regid == _counter_args(self.uc)[0]:
            raise ValueError("reg_write_parts cannot write the PC (use set_pc)")
        slot = ctypes.c_uint64()
        write = functools.partial(self._uc_rw, self._engine, regid, ctypes.byref(slot))
        self._batch_keep.append(slot)
        return slot, write

    def make_batch_raw(self, regids: Sequence[int], width: int) -> Callable[[], bytes]:
        """A reader of registers ``width`` bytes wide (e.g. 16 for AArch64 Q registers) in one
        libunicorn call: their values back to back in the host's byte order (little-endian)."""
        n = len(regids)
        buf, ptrs, ids = _reg_slots(regids, width)
        rrb, uch = self._uc_rrb, self._engine

        def read() -> bytes:
            rrb(uch, ids, ptrs, n)
            return buf.raw
        read.keep = (buf, ptrs, ids)  # type: ignore[attr-defined]
        return read

    def make_batch_writer_raw(self, regids: Sequence[int]) -> Callable[[bytes], None]:
        """A writer for a fixed list of 64-bit registers in one libunicorn call, given their
        values as bytes, 8 a register in the host's (little-endian) byte order — what
        :meth:`make_batch_raw` reads, and how a signal frame holds them: no Python integer is
        made for each register.  A PC among them redirects the CPU as a single write would."""
        n = len(regids)
        buf, ptrs, ids = _reg_slots(regids, 8)
        uc_rwb, uch = self._uc_rwb, self._engine
        pc_written = self.counter.pc_written if _counter_args(self.uc)[0] in regids else None

        def write(data: bytes) -> None:
            if len(data) != 8 * n:
                raise ValueError(f"{len(data)} bytes for {n} registers")
            buf.raw = data
            uc_rwb(uch, ids, ptrs, n)
            if pc_written is not None:
                pc_written()            # see set_pc
        write.keep = (buf, ptrs, ids)  # type: ignore[attr-defined]
        return write

    def make_batch_writer(self, regids: Sequence[int]) -> Callable[[Sequence[int]], None]:
        """A writer for a fixed list of 64-bit registers in one libunicorn call (values in the
        list's order; a PC among them redirects the CPU as a single write would)."""
        n = len(regids)
        buf, ptrs, ids = _reg_slots(regids)
        uc_rwb = self._uc_rwb
        uch = self._engine

        if _counter_args(self.uc)[0] in regids:
            pc_written = self.counter.pc_written

            def write_pc(values: Sequence[int]) -> None:
                buf[:] = values             # (any sequence)
                uc_rwb(uch, ids, ptrs, n)
                pc_written()            # see set_pc
            write_pc.keep = (buf, ptrs, ids)  # type: ignore[attr-defined]
            return write_pc

        def write(values: Sequence[int]) -> None:
            buf[:] = values             # (low 64 bits kept, as _write masks)
            uc_rwb(uch, ids, ptrs, n)
        write.keep = (buf, ptrs, ids)  # type: ignore[attr-defined]
        return write

    # ---- time ----------------------------------------------------------------------------------
    @property
    def now(self) -> int:
        """This CPU's local time in cycles."""
        return self._cs.count + self.extra_user + self.sys_cycles + self.idle_cycles

    def marks(self) -> tuple[int, int]:
        """(:attr:`now`, :attr:`user_cycles`) in one call: what the kernel's entry and exit
        accounting reads on every trap."""
        c = self._cs.count
        eu = self.extra_user
        return c + eu + self.sys_cycles + self.idle_cycles, c - self.stub_insns + eu

    def charge_marks(self, cycles: int) -> tuple[int, int]:
        """:meth:`charge` (kernel time) then :meth:`marks`, in one call: the end of a trap."""
        if cycles > 0:
            self.sys_cycles += cycles
        c = self._cs.count
        eu = self.extra_user
        return c + eu + self.sys_cycles + self.idle_cycles, c - self.stub_insns + eu

    @property
    def insns(self) -> int:
        """Instructions retired (user and kernel stubs)."""
        return self.counter.count

    @property
    def user_insns(self) -> int:
        return self.counter.count - self.stub_insns

    @property
    def user_cycles(self) -> int:
        """Cycles spent in user mode: one per user instruction plus the extra cycles of long
        user instructions (vector instructions on the RVV unit)."""
        return self._cs.count - self.stub_insns + self.extra_user

    def charge(self, cycles: int, user: bool = False) -> None:
        """Advance this CPU's time by kernel (or extra user) work.

        The run deadline (in instructions) is moved by the same amount when the hook returns
        (:meth:`commit_charges`), so a tick still fires at its exact cycle.  (``user`` is not
        keyword-only: a call that leaves out a keyword-only default takes CPython's slower call
        path, measured at a sixth of this call, which a syscall makes three or four times.)"""
        if cycles > 0:
            if user:
                self.extra_user += cycles
            else:
                self.sys_cycles += cycles

    def commit_charges(self) -> None:
        charged = self.extra_user + self.sys_cycles + self.idle_cycles
        delta = charged - self._committed
        if delta:
            self._committed = charged
            if self.running:
                self.counter.deadline = self.counter.deadline - delta

    def idle_until(self, t: int) -> None:
        if t > self.now:
            self.idle_cycles += t - self.now

    # ---- memory --------------------------------------------------------------------------------
    def attach_mm(self, mm: AddressSpace) -> None:
        """Make this CPU see ``mm`` (switch_mm): map its buffers into Unicorn.

        Only the difference to what is mapped now is applied, so this is cheap for threads of
        the same process and safe inside a hook (the mapping that holds the running code is left
        alone when it did not change)."""
        if mm is self.mm and mm.version == self.mapped_version and not self._exits_dirty and (
                not self.scan_code or (mm.code_gen == self._code_gen and mm.scan_gen == self._scan_gen)):
            return      # a switch between threads of one process: nothing to do (the tests below, at once)
        if mm is not self.mm and self._engines_on():
            if not self.running:
                self._switch_engine(mm)
            else:
                # inside a hook (execve's new mm): the engine that runs cannot change under
                # Unicorn, so it is remapped below and serves the new address space from now on
                self._rebind_engine(mm)
        if mm is self.mm and mm.version == self.mapped_version:
            if self.scan_code and mm.code_gen != self._code_gen:
                self._reset_code_view()
            if self.scan_code and mm.scan_gen != self._scan_gen:
                self._sync_foreign()
            self._flush_exits()
            return
        if mm is not self.mm:
            # another address space: the same addresses may hold other code (the block
            # counter's cached RISC-V block lengths are per address)
            self.counter.code_changed()
            if self.scan_code:
                self._leave_mm()
        switched = mm is not self.mm
        # the scan state this CPU parked for mm, if still right: its executable runs are
        # mapped executable straight away (a mem_protect after mapping splits the region,
        # which costs several times a map)
        # (or, for an engine new to mm, what fork_code_view parked for a forked child)
        parked = self._take_parked(mm) if (switched or not self._mapped) and self.scan_code else None
        xruns = _page_runs(parked) if parked else []
        fresh: list[tuple[int, int]] = []
        strip = UC_PROT_EXEC if self.scan_code else 0     # executable only once scanned
        if not _ACCESS_LIMIT:
            want = {(m.start, m.size, uc_prot(m.perms) & ~strip, m.host_addr()) for m in mm.mappings}
        else:           # (a buffer's tail the guest may not touch: mapped with no access)
            want = {r for m in mm.mappings for r in engine_regions(m, uc_prot(m.perms) & ~strip)}
        have = set(self._mapped)
        for start, size, _prot, _host in sorted(have - want):
            self.uc.mem_unmap(start, size)
            self._forget_pages(start, start + size)
        for start, size, prot, host in sorted(want - have):
            self._map_pieces(start, size, prot, host, xruns)
            fresh.append((start, start + size))
        self._mapped = sorted(want)
        if switched or parked:
            self._code_gen = mm.code_gen
        self.mm = mm
        if parked:
            self._unpark(mm, parked, xruns, fresh)
        self.mapped_version = mm.version
        if self.scan_code:
            if mm.code_gen != self._code_gen:
                self._reset_code_view()
            self._scan_gen = -1           # (remapped ranges lost their protection: resync)
            self._sync_foreign()
        self._flush_exits()

    # ---- engines per address space -------------------------------------------------------------
    # A switch between processes used to unmap one address space's regions from the CPU's
    # Unicorn engine and map the other's, and every translated block went with them.  Instead
    # the CPU keeps an engine per address space it runs (up to KEPT_ENGINES, least recently used
    # beyond that go), and switch_mm picks the engine: its regions, translations, exits and
    # scanned pages are still there.  The engines are one CPU: the architectural state (every
    # register, system registers included) is copied into the engine taken, and the counter,
    # hooks and Python state are shared (uc_internal.EngineSet).  A map change made while an
    # engine waits reaches it as any map change reaches a CPU: mm.version differs when the
    # engine is taken again, and attach_mm applies the difference (memory.py's changes never
    # touch Unicorn themselves: this is the one place they reach it).
    ENGINES_PER_MM = os.environ.get("EMUKERN_ENGINES_PER_MM", "1") != "0"   # off: one engine, remapped
    KEPT_ENGINES = 6
    SPARE_ENGINES = 2           # engines of dead address spaces kept for the next new one

    def _engines_on(self) -> bool:
        """Engines per address space need the recorded set-up (new_uc) and the native block
        counter; the debugger's exact counting adds hooks to one engine, so it turns them off."""
        c = self.counter
        return (self.ENGINES_PER_MM and self._es is not None and getattr(c, "kind", "") == "native"
                and not c.exact)

    def _stash_engine(self) -> _Engine:
        rec = self._engine_rec
        rec.mapped, rec.mapped_version = self._mapped, self.mapped_version
        rec.xpages, rec.exits, rec.exits_dirty = self._xpages, self._exits, self._exits_dirty
        rec.foreign, rec.scan_gen, rec.code_gen = self._foreign, self._scan_gen, self._code_gen
        rec.splits = self.counter.take_splits()    # type: ignore[union-attr]
        rec.count_view = self.counter.view()
        return rec

    def _load_engine(self, rec: _Engine) -> None:
        self._engine_rec = rec
        self._mapped, self.mapped_version = rec.mapped, rec.mapped_version
        self._xpages, self._exits, self._exits_dirty = rec.xpages, rec.exits, rec.exits_dirty
        self._foreign, self._scan_gen, self._code_gen = rec.foreign, rec.scan_gen, rec.code_gen
        self.counter.put_splits(rec.splits)       # type: ignore[union-attr]
        self.counter.set_view(rec.count_view)
        self.mm = rec.serves()

    def _switch_engine(self, mm: AddressSpace) -> None:
        """switch_mm's choice of engine (see above); leaves self.mm at ``mm`` when its engine
        was kept, at None for an engine new to it."""
        es = self._es
        assert es is not None
        cur = self._engine_rec
        if cur.mm is None:              # the first address space this CPU runs: its engine
            cur.mm = weakref.ref(mm)
            return
        # (block lengths are cached by address: _load_engine puts the counter back on the
        # engine's own cache of them, or an empty one for a fresh engine)
        rec = self._kept.pop(id(mm), None)
        if rec is not None and rec.serves() is not mm:
            self._drop_engine(rec)
            rec = None
        self._stash_engine()
        old_mm = cur.serves()
        if rec is None:
            rec = self._fresh_engine(cur.handle)
            rec.mm = weakref.ref(mm)
        es.copy_state(cur.handle, rec.handle)
        es.select(rec.handle)
        self.engine_switches += 1
        if old_mm is not None:
            self._kept[id(old_mm)] = cur
        else:
            self._drop_engine(cur)
        self._load_engine(rec)
        if self.decodes_per_address and self.mm is mm and self._xpages and mm.code_gen == self._code_gen:
            same = mm.version == self.mapped_version
            # A pass that would find every page's memo entry where the last pass left it (no
            # scan has replaced an entry since: _memo_gen unchanged) would skip every page
            if not same or rec.redecoded_gen != self._memo_gen:
                self._redecode(mm, self._xpages, rec.redecoded if same else None)
                rec.redecoded_gen = self._memo_gen if same else -1
        for key in [k for k, r in self._kept.items() if r.serves() is None]:
            self._drop_engine(self._kept.pop(key))
        while len(self._kept) >= self.KEPT_ENGINES:
            self._drop_engine(self._kept.pop(next(iter(self._kept))))

    def _rebind_engine(self, mm: AddressSpace) -> None:
        """The engine in use changes address space in place (attach_mm remaps it): it no longer
        serves the old one, and an engine kept for the new one goes."""
        rec = self._kept.pop(id(mm), None)
        if rec is not None:
            self._drop_engine(rec)
        self._engine_rec.mm = weakref.ref(mm)

    def _fresh_engine(self, src: int) -> _Engine:
        """An engine with no address space in it: a spare one emptied, or a new one set up as
        the first (its machine-owned pages copied from ``src``, the engine in use)."""
        es = self._es
        assert es is not None
        if self._spare:
            rec = self._spare.pop()
            es.select(rec.handle)
            try:
                for start, size, _prot, _host in rec.mapped:
                    self.uc.mem_unmap(start, size)
                n, pairs, _clean = rec.splits
                for at, hk in pairs[:n]:
                    uc_internal.hook_del_native(self.uc, ctypes.c_size_t(hk))
                # the architecture's per-address hooks (arm64's atomics) belong to the code of
                # the address space this engine served: left in, one would fire at the same
                # address in the next program, whatever instruction is there now (the arm64
                # atomics' livelock: a stale hook tested a register as an atomic's base and
                # stopped the run before a plain instruction, again and again)
                for hh in rec.local_hooks.values():
                    uc_internal.hook_del_local(self.uc, hh)
                rec.local_hooks.clear()
                if rec.exits:
                    self.uc.ctl_set_exits([])
                self.uc.ctl_flush_tb()
            finally:
                es.select(src)
            fresh = _Engine(rec.handle)
        else:
            fresh = _Engine(es.open())
            try:
                self._engine_opened(src)
            finally:
                es.select(src)
            self.engines_made += 1
        return fresh

    def _engine_opened(self, src: int) -> None:
        """A new engine (selected) has the recorded set-up; the architecture copies in what the
        machine wrote into its own regions of engine ``src`` since."""

    def _drop_engine(self, rec: _Engine) -> None:
        """An engine no longer kept for its address space: the pages it held executable are
        given up (mm.scanned), and it becomes a spare or is closed."""
        mm = rec.serves()
        if mm is not None:
            for page in rec.xpages:
                self._release(mm, page)
        if len(self._spare) < self.SPARE_ENGINES:
            rec.mm = None
            self._spare.append(rec)
        else:
            assert self._es is not None
            self._es.close(rec.handle)

    def drop_engines(self) -> None:
        """Keep only the engine in use (the debugger's exact counting hooks one engine)."""
        for rec in list(self._kept.values()) + self._spare:
            mm = rec.serves()
            if mm is not None:
                for page in rec.xpages:
                    self._release(mm, page)
            if self._es is not None:
                self._es.close(rec.handle)
        self._kept.clear()
        self._spare.clear()

    def _write_fixed(self, addr: int, data: bytes) -> None:
        """Write a machine-owned region (not an address space's) in every engine of this CPU."""
        self.uc.mem_write(addr, data)
        es = self._es
        if es is None:
            return
        cur = es.current
        try:
            for rec in list(self._kept.values()) + self._spare:
                es.select(rec.handle)
                self.uc.mem_write(addr, data)
                self.uc.ctl_remove_cache(addr, addr + len(data))
        finally:
            es.select(cur)

    def _redecode(self, mm: AddressSpace, pages: dict[int, tuple[int, ...]],
                  seen: dict[int, Any] | None = None) -> None:
        """Back on an engine whose scanned pages have exit words: the architecture's per-address
        decodes of them (arm64's LSE atomics) may be another address space's by now, so those
        pages go through _scan_bytes again (the memo answers at once when the bytes are the
        ones it saw last).

        ``seen`` (the engine's record, when its address space has not been remapped since it
        was last used): page -> the memo entry this pass last found matching the page's bytes.
        A page whose memo entry is still that same object is skipped without copying it: its
        bytes cannot have changed (a scanned page that is written leaves ``pages``, and a
        kernel write moves code_gen, which stops this pass altogether), and only a scan that
        replaced the memo entry -- another address space's bytes at that address -- could have
        changed the decodes, so _scan_bytes would find the memo matching and do nothing.  (The
        4 bytes past the page that a scan also reads can change without the page leaving
        ``pages``; they matter only where an instruction straddles pages, RISC-V's, whose scan
        keeps no per-address decodes: decodes_per_address.)"""
        memo = self._scan_memo
        for page, exits in pages.items():
            if not exits:
                continue
            if seen is not None:
                ent = memo.get(page)
                if ent is not None and seen.get(page) is ent:
                    continue
            m = mm.find(page)
            if m is None or "x" not in m.perms:
                continue
            o = m.offset + page - m.start
            data = bytes(m.buf[o:o + PAGE + 4]) if page + PAGE < m.end else bytes(m.buf[o:o + PAGE])
            if page + PAGE >= m.end:
                nxt = mm.find(m.end)
                if nxt is not None and "x" in nxt.perms:
                    no = nxt.offset + m.end - nxt.start
                    data += bytes(nxt.buf[no:no + 4])
            self._scan_bytes(page, data)
            if seen is not None:
                seen[page] = memo.get(page)

    def flush_translations(self) -> None:
        """Drop every translated block (call only while the CPU is stopped).  Unicorn keeps the
        blocks of host memory that was unmapped and freed until its code buffer fills, so a
        kernel that frees address spaces calls this now and then to keep host memory bounded."""
        self.uc.ctl_flush_tb()

    def syscall_regs(self) -> list[int]:
        """The syscall number and its six arguments, as the arch's ABI passes them."""
        raise NotImplementedError

    def sync_mm(self) -> None:
        """Bring Unicorn's view up to the address space's changes (map changes, code written,
        pages other CPUs scanned).  (:meth:`run` repeats its test inline: a change here is made
        there too.)"""
        mm = self.mm
        if mm is not None and (mm.version != self.mapped_version or mm.code_gen != self._code_gen
                               or mm.scan_gen != self._scan_gen):
            self.attach_mm(mm)

    # ---- scan-on-execute (see the module docstring) --------------------------------------------
    def _code_exits(self, page: int, data: bytes) -> list[int]:
        """Addresses in ``page`` whose words Unicorn must not translate.  ``data`` is the page
        and, when mapped, the first bytes of the next one (an instruction may straddle)."""
        return []

    # pages whose last scan a CPU remembers (4 KiB each): past this the memo starts over
    SCAN_MEMO_PAGES = 4096

    def _scan_bytes(self, page: int, data: bytes) -> list[int] | tuple[int, ...]:
        """:meth:`_code_exits`, remembered per page with the bytes it was given: a page scanned
        again with the same bytes (the same program's code in a forked child, after exec of the
        same file, or on switching back to a parked address space) gets the same answer without
        decoding it again.  The architecture's per-address decodes (arm64's LSE atomics) are
        those of the last scan of that page, so they hold for the same bytes too."""
        memo = self._scan_memo.get(page)
        if memo is not None and memo[0] == data:
            return memo[1]
        exits = tuple(self._code_exits(page, data))
        if len(self._scan_memo) >= self.SCAN_MEMO_PAGES:
            self._scan_memo.clear()
        self._scan_memo[page] = (data, exits)
        self._memo_gen += 1
        return exits

    def _exit_reached(self, pc: int) -> bool:
        """The run stopped at an exit word: complete it (True: keep running) or deliver its trap
        (False: back to the scheduler)."""
        return False

    def _forget_pages(self, start: int, end: int) -> None:
        self.counter.code_changed()    # cached block lengths of that code are stale
        mm = self.mm
        for page in [p for p in self._xpages if start <= p < end]:
            self._exits.difference_update(self._xpages.pop(page))
            self._exits_dirty = True
            if mm is not None:
                self._release(mm, page)
        self._foreign = {p for p in self._foreign if not start <= p < end}

    @staticmethod
    def _release(mm: AddressSpace, page: int) -> None:
        n = mm.scanned.get(page, 0) - 1
        if n > 0:
            mm.scanned[page] = n
        else:
            mm.scanned.pop(page, None)
        mm.scan_gen += 1

    # address spaces whose scan state a CPU keeps while it runs others (least recently left
    # beyond this are released)
    PARKED_MMS = 16

    def _leave_mm(self) -> None:
        """switch_mm away from the current mm.  Its scanned pages are parked, still held in
        ``mm.scanned``: coming back to it (the other end of a pipe, a parent after its child
        ran) then restores them without a fetch fault and a scan per 64 KiB block of code,
        which is what a switch between processes cost (measured: ~1.3 ms of a ~1.4 ms switch
        on a static glibc program).  Holding them is what keeps the parked state right: a store
        to one by another CPU, or a kernel write to executable memory, bumps ``code_gen``, and
        any map change bumps ``version``; either drops the parked state on return."""
        mm = self.mm
        if mm is not None and self._xpages:
            old = self._parked.pop(mm, None)
            if old is not None:                  # (cannot happen: unparked on attach)
                self._release_parked(mm, old[0])
            self._parked[mm] = (dict(self._xpages), mm.code_gen, mm.version)
            while len(self._parked) > self.PARKED_MMS:
                victim = next(iter(self._parked))
                self._release_parked(victim, self._parked.pop(victim)[0])
        self._xpages.clear()
        self._foreign.clear()
        if self._exits:
            self._exits.clear()
            self._exits_dirty = True

    def fork_code_view(self, parent: AddressSpace, child: AddressSpace) -> None:
        """dup_mmap has just made ``child`` from ``parent``, the address space this CPU runs:
        every page holds the parent's bytes, so the code this CPU scanned for the parent is
        scanned for the child too.  It is parked for the child, as if the child had run here
        and left: the child's first run here maps it executable at once, instead of taking a
        fetch fault, a scan and a Unicorn region split per 64 KiB block of code it runs
        (measured on arm64 bash, 40 subshells: 1,397 such splits, 0.47 s of a 1.14 s run).
        A change to the child's code or mappings before it runs drops the parked state, as
        for any parked address space (_take_parked)."""
        if not self.scan_code or parent is not self.mm or not self._xpages or child in self._parked:
            return
        pages = dict(self._xpages)
        for page in pages:                  # held while parked (see _leave_mm)
            child.scanned[page] = child.scanned.get(page, 0) + 1
        child.scan_gen += 1
        self._parked[child] = (pages, child.code_gen, child.version)
        while len(self._parked) > self.PARKED_MMS:
            victim = next(iter(self._parked))
            self._release_parked(victim, self._parked.pop(victim)[0])

    def _release_parked(self, mm: AddressSpace, pages: dict[int, tuple[int, ...]]) -> None:
        for page in pages:
            self._release(mm, page)

    def _take_parked(self, mm: AddressSpace) -> dict[int, tuple[int, ...]] | None:
        """The scanned pages this CPU parked for ``mm`` (see _leave_mm), if nothing changed
        them meanwhile; stale ones are released."""
        parked = self._parked.pop(mm, None)
        if parked is None:
            return None
        pages, code_gen, version = parked
        if code_gen != mm.code_gen or version != mm.version or self._xpages:
            self._release_parked(mm, pages)
            return None
        return pages

    def _map_pieces(self, start: int, size: int, prot: int, host: int, xruns: list[tuple[int, int]]) -> None:
        """mem_map_ptr of one mapping, the parts inside ``xruns`` (scanned code) executable
        and read-only, as _scan_page leaves them."""
        pos, end = start, start + size
        for lo, hi in xruns:
            lo, hi = max(lo, start), min(hi, end)
            if lo >= hi:
                continue
            if lo > pos:
                self.uc.mem_map_ptr(pos, lo - pos, prot, host + (pos - start))
            self.uc.mem_map_ptr(lo, hi - lo, UC_PROT_READ | UC_PROT_EXEC, host + (lo - start))
            pos = hi
        if pos < end:
            self.uc.mem_map_ptr(pos, end - pos, prot, host + (pos - start))

    def _unpark(self, mm: AddressSpace, pages: dict[int, tuple[int, ...]], xruns: list[tuple[int, int]],
                fresh: list[tuple[int, int]]) -> None:
        """switch_mm back to an address space this CPU parked (just mapped, the parked runs
        executable in the ``fresh``ly mapped ranges): its scanned pages are executable again as
        they were, without a fetch fault and a scan each.  Pages with exit words go through
        _scan_bytes again (the architecture may keep per-address decodes the scan makes, which
        another address space's scan can have replaced: the memo answers at once when not);
        the result must be the one parked, the bytes being the same."""
        for page, exits in pages.items():
            if exits:
                m = mm.find(page)
                assert m is not None
                o = m.offset + page - m.start
                data = bytes(m.buf[o:o + PAGE + 4]) if page + PAGE < m.end else bytes(m.buf[o:o + PAGE])
                if page + PAGE >= m.end:
                    nxt = mm.find(m.end)
                    if nxt is not None and "x" in nxt.perms:
                        no = nxt.offset + m.end - nxt.start
                        data += bytes(nxt.buf[no:no + 4])
                if tuple(self._scan_bytes(page, data)) != exits:
                    raise AssertionError(f"parked page {page:#x} scanned differently")
                self._exits.update(exits)
                self._exits_dirty = True
        self._xpages = pages
        for lo, hi in xruns:        # runs in ranges that stayed mapped: protect them here
            if not any(flo <= lo and hi <= fhi for flo, fhi in fresh):
                self.uc.mem_protect(lo, hi - lo, UC_PROT_READ | UC_PROT_EXEC)

    def _sync_foreign(self) -> None:
        """Write-protect the pages other CPUs made executable after a scan (their translations
        and exits depend on the bytes staying the same); release the ones they gave up."""
        mm = self.mm
        assert mm is not None
        want = {p for p in mm.scanned if p not in self._xpages}
        for p in self._foreign - want:
            m = mm.find(p)
            if m is not None:
                self.uc.mem_protect(p, PAGE, uc_prot(m.perms) & ~UC_PROT_EXEC)
        keep = set()
        for p in want:
            m = mm.find(p)
            if m is None or "w" not in m.perms:
                continue
            if p not in self._foreign:
                self.uc.mem_protect(p, PAGE, uc_prot(m.perms) & ~(UC_PROT_EXEC | UC_PROT_WRITE))
            keep.add(p)
        self._foreign = keep
        self._scan_gen = mm.scan_gen

    def _flush_exits(self) -> None:
        if self._exits_dirty:
            self.uc.ctl_set_exits(sorted(self._exits))
            self._exits_dirty = False

    def _reset_code_view(self) -> None:
        """The kernel wrote executable memory: every scanned page goes back to unscanned."""
        assert self.mm is not None
        for page in list(self._xpages):
            m = self.mm.find(page)
            if m is not None:
                self.uc.mem_protect(page, PAGE, uc_prot(m.perms) & ~UC_PROT_EXEC)
                self.uc.ctl_remove_cache(page, page + PAGE)
        for page in self._foreign:
            m = self.mm.find(page)
            if m is not None:
                self.uc.mem_protect(page, PAGE, uc_prot(m.perms) & ~UC_PROT_EXEC)
        self._forget_pages(0, 1 << 64)
        self._foreign.clear()
        self._code_gen = self.mm.code_gen
        self._scan_gen = -1
        self._flush_exits()

    def _scan_page(self, page: int) -> bool:
        """A fetch from a page Unicorn sees as non-executable: scan it and make it executable
        if the guest may execute it.  False if it is not guest-executable (a real fault).

        The unscanned pages of the SCAN_CHUNK-aligned block around it (inside the same mapping)
        are scanned too and made executable with one ``mem_protect``: every protect splits a
        Unicorn region, and the faults and splits, not the scans, are what costs."""
        mm = self.mm
        m = mm.find(page) if mm is not None else None
        if m is None or "x" not in m.perms or page in self._xpages:
            return False
        assert mm is not None
        lo = max(m.start, page & ~(SCAN_CHUNK - 1))
        hi = min(m.end, (page & ~(SCAN_CHUNK - 1)) + SCAN_CHUNK)
        while lo < page and lo in self._xpages:
            lo += PAGE
        first = page
        while first > lo and first - PAGE not in self._xpages:
            first -= PAGE
        last = page + PAGE
        while last < hi and last not in self._xpages:
            last += PAGE
        o = m.offset + first - m.start
        data = bytes(m.buf[o:o + (last - first) + 4]) if last < m.end else bytes(m.buf[o:o + (last - first)])
        if last >= m.end:
            nxt = mm.find(m.end)
            if nxt is not None and "x" in nxt.perms:
                no = nxt.offset + m.end - nxt.start
                data += bytes(nxt.buf[no:no + 4])
        added = False
        in_sync = self._scan_gen == mm.scan_gen
        for pg in range(first, last, PAGE):
            i = pg - first
            exits = tuple(self._scan_bytes(pg, data[i:i + PAGE + 4]))
            self.code_scans += 1
            self._xpages[pg] = exits
            self._foreign.discard(pg)
            mm.scanned[pg] = mm.scanned.get(pg, 0) + 1
            mm.scan_gen += 1
            if exits:
                self._exits.update(exits)
                added = True
        if in_sync:
            self._scan_gen = mm.scan_gen
        if added:
            self._exits_dirty = True
            self._flush_exits()
        # executable and, while it is, not writable: a store faults and flips it back (W^X)
        self.uc.mem_protect(first, last - first, UC_PROT_READ | UC_PROT_EXEC)
        return True

    def _unscan_page(self, page: int) -> bool:
        """A store to a scanned page the guest may write (scanned here or by another CPU):
        writable again here, not executable.  Other CPUs that hold it executable must drop it
        before they run again: ``code_gen`` makes them reset their views."""
        mm = self.mm
        m = mm.find(page) if mm is not None else None
        if m is None or "w" not in m.perms or (page not in self._xpages and page not in self._foreign):
            return False
        assert mm is not None
        mine = page in self._xpages
        self._forget_pages(page, page + 1)
        self._flush_exits()
        if mm.scanned.get(page, 0) > 0:          # another CPU still holds it executable
            mm.code_gen += 1
            self._code_gen = mm.code_gen         # this CPU's other pages are still right
        in_sync = self._scan_gen == mm.scan_gen
        mm.scan_gen += 1
        if in_sync:
            self._scan_gen = mm.scan_gen
        self.uc.mem_protect(page, PAGE, uc_prot(m.perms) & ~UC_PROT_EXEC)
        if mine:
            self.uc.ctl_remove_cache(page, page + PAGE)
        return True

    def _fix_view(self, exc: UcError) -> bool:
        """Handle a fault that only exists in Unicorn's view (True: retry the same PC)."""
        if not self.scan_code or self._fault is None:
            return False
        addr, _access = self._fault
        page = addr & ~(PAGE - 1)
        if exc.errno == UC_ERR_FETCH_PROT:
            return self._scan_page(page)
        if exc.errno == UC_ERR_WRITE_PROT and self._unscan_page(page):
            self.counter.count -= 1        # the store was counted before it faulted; it reruns
            # a store that also covers the next page is retried as a whole
            return True
        return False

    # ---- registers by name (emukern.machine.regs) ------------------------------------------------
    def regid(self, name: str) -> int:
        """The Unicorn engine id of register ``name`` on this CPU (:mod:`emukern.machine.regs`),
        for the hot paths that keep ids (:meth:`write_regid`, the batch readers and writers)."""
        return regs.regid(self.arch, name)

    def reg_read(self, name: str) -> int:
        """Register ``name`` (any name :mod:`emukern.machine.regs` has for this architecture),
        as the engine holds it: 128-bit for arm64 v/q, else at most 64 bits."""
        rid = regs.regid(self.arch, name)
        width = regs.bits(self.arch, name)
        if rid == regs.ARM64_REGS["cp_reg"] and self.arch == regs.ARM64:
            raise ValueError("cp_reg is not a register: use cpr_read")
        if width == 64:
            return self._read(rid)
        return int(self.uc.reg_read(rid))

    def reg_write(self, name: str, value: int) -> None:
        """Write register ``name`` (its low :func:`regs.bits` bits of ``value``); the PC as
        :meth:`set_pc` writes it."""
        rid = regs.regid(self.arch, name)
        width = regs.bits(self.arch, name)
        if rid == regs.ARM64_REGS["cp_reg"] and self.arch == regs.ARM64:
            raise ValueError("cp_reg is not a register: use cpr_write")
        if rid == _counter_args(self.uc)[0]:
            self.set_pc(value & 0xFFFF_FFFF_FFFF_FFFF)
        elif width == 64:
            self._write(rid, value)
        else:
            self.uc.reg_write(rid, value & ((1 << width) - 1))

    # ---- registers (arch subclasses provide the tables) ------------------------------------------
    def get_pc(self) -> int:
        raise NotImplementedError

    def set_pc(self, pc: int) -> None:
        raise NotImplementedError

    def reg(self, i: int) -> int:
        raise NotImplementedError

    def set_reg(self, i: int, value: int) -> None:
        raise NotImplementedError

    def save_context(self) -> dict[str, Any]:
        raise NotImplementedError

    def load_context(self, ctx: dict[str, Any]) -> None:
        raise NotImplementedError

    # ---- running -------------------------------------------------------------------------------
    def stop(self) -> None:
        """Ask the CPU to return to the scheduler after the current hook."""
        self.stop_requested = True
        if self.running:
            self.uc.emu_stop()

    def run(self, until: int) -> None:
        """Run user code until local time reaches ``until`` or the kernel stops the CPU."""
        if self.single_step and not self._stepping:
            self._run_one_step(until)
            return
        mm = self.mm
        if mm is not None and (mm.version != self.mapped_version or mm.code_gen != self._code_gen
                               or mm.scan_gen != self._scan_gen):
            self.attach_mm(mm)      # sync_mm, inline (one frame fewer on every run)
        self.stop_requested = False
        budget = until - self.now
        if budget <= 0:
            return
        counter = self.counter
        cs = self._cs              # the live count and deadline (see __init__)
        d = cs.count + budget      # > 0: the counter's setter would only clamp it to 2**63
        cs.deadline = d if d < 2**63 else 2**63
        self._committed = self.extra_user + self.sys_cycles + self.idle_cycles
        self.running = True
        # (the splits' count read here, not in a call: an SMP run with a contended lock starts a
        # CPU once per trap, and there are none to remove on almost every start)
        if getattr(cs, "nsplit", 0):
            counter.unsplit()      # left by a stub run (arm64 stub_sync)
        try:
            while True:
                self._fault = None
                try:
                    self._emu_start(self.get_pc())
                except UcError as exc:
                    counter.fix(self.get_pc())      # the rest of the faulting block did not run
                    if self._fault is None and self._fault_address is not None and exc.errno in _ERR_ACCESS:
                        self._fault = (self._fault_address(), _ERR_ACCESS[exc.errno])
                    if self._fix_view(exc):
                        continue
                    self.running = False
                    self._deliver(self._trap_from_error(exc))
                    break
                if not self.stop_requested and cs.count < cs.deadline and self._stub_in_flight():
                    continue        # Unicorn ends a run when a hook changes page permissions
                if not self.scan_code or self.stop_requested or cs.count >= cs.deadline:
                    break
                pc = self.get_pc()
                if pc not in self._exits:
                    break
                self.exit_stops += 1
                if not self._exit_reached(pc):
                    break
        finally:
            self.running = False
            cs.deadline = 2**63        # (the counter's setter clamps to this: no call needed)
            if getattr(cs, "nsplit", 0):
                counter.unsplit()

    def _run_one_step(self, until: int) -> None:
        """Software step: run one user instruction (a deadline of one cycle: the counter stops
        the run between two instructions), then take the step exception.  When the instruction
        trapped instead (a syscall, a fault, an access trap) the kernel has it: it may disarm
        the step (arm64 reports a stepped syscall at its exit); one still armed steps the
        instruction the trap made re-execute on the next run.  Kernel stub instructions run
        before user code do not count as the step."""
        u0, t0 = self.user_insns, self.traps_seen
        self._stepping = True
        try:
            while self.single_step and self.now < until and self.user_insns == u0 and self.traps_seen == t0:
                self.run(min(until, self.now + 1))
                if self.stop_requested:
                    break
        finally:
            self._stepping = False
        if self.single_step and self.user_insns > u0 and self.traps_seen == t0:
            self.single_step = False      # PSTATE.SS now 0: the step exception is taken
            self._deliver(self.step_trap())

    def step_trap(self) -> Trap:
        """The software-step exception at the current PC (architectures that have one)."""
        raise NotImplementedError

    def _emu_start(self, pc: int) -> None:
        """``uc.emu_start(pc, UNTIL_NEVER)`` through the argtype-less function pointer: the same
        libunicorn call, and the same error handling as the binding's (a bad status raises
        UcError; an exception a hook kept for it (hook_intr's guard, the binding's hooks) is
        raised once the run has stopped) -- :func:`uc_internal.emu_starter`."""
        self._start(pc)

    def _stub_in_flight(self) -> bool:
        """A kernel stub sequence started from a hook has not reached its end yet (arm64)."""
        return False

    def _deliver(self, trap: Trap) -> None:
        self.traps_seen += 1
        on_trap = self.on_trap
        if on_trap is None:
            raise RuntimeError("no kernel attached to this CPU")
        on_trap(self, trap)
        self._trap_done()

    def _trap_done(self) -> None:
        """After the kernel handled a trap (both delivery paths end here): the cycles it charged
        move the counter's deadline (commit_charges, inlined), and code the kernel wrote into
        executable memory (e.g. read() into it) is rescanned.  ``_syscall_exc`` repeats these
        steps inline, one frame fewer on the hottest trap: a change here is made there too."""
        charged = self.extra_user + self.sys_cycles + self.idle_cycles
        delta = charged - self._committed
        if delta:
            self._committed = charged
            if self.running:
                cs = self._cs
                d = cs.deadline - delta
                cs.deadline = d if d > 0 else 0
        mm = self.mm
        if self.scan_code and mm is not None and mm.code_gen != self._code_gen and mm.version == self.mapped_version:
            self._reset_code_view()

    def syscall_trap(self, pc: int, word: int, regs: Sequence[int]) -> Trap:
        """The :class:`Trap` a syscall delivered through ``on_syscall`` stands for (the one
        ``on_trap`` would have been given): the architecture's syndrome for it."""
        raise NotImplementedError

    # the syscall instruction's word when it is always the same (RISC-V ecall); None: read it
    # (AArch64 svc #imm: the immediate is in the syndrome) with _syscall_word
    syscall_insn: int | None = None

    def _syscall_word(self, pc: int) -> int:
        raise NotImplementedError

    def _syscall_exc(self) -> None:
        """The syscall exception, straight from the INTR callback (the hottest trap): the PC and
        the syscall registers in one libunicorn call (``_sys_fill``/``_sys_get``, made by the
        architecture: PC, number, six arguments), delivered to ``on_syscall`` as numbers with
        the CPU's :meth:`marks` — no Trap object — or as a Trap through :meth:`_deliver` when
        the kernel has no syscall entry.  The PC is the one after the instruction (both architectures' syscall
        instructions are 4 bytes)."""
        self._sys_fill()
        regs = self._sys_get()
        pc = regs[0] - 4
        word = self.syscall_insn
        if word is None:
            word = self._syscall_word(pc)
        on_syscall = self.on_syscall
        if on_syscall is None:
            self._deliver(self.syscall_trap(pc, word, regs[1:]))
            return
        self.traps_seen += 1
        c = self._cs.count          # the marks (as marks() computes them, without its frame)
        eu = self.extra_user
        on_syscall(self, pc, word, regs[1:], c + eu + self.sys_cycles + self.idle_cycles, c - self.stub_insns + eu)
        # _trap_done, inline (the same two steps, one Python frame fewer on every syscall)
        charged = self.extra_user + self.sys_cycles + self.idle_cycles
        delta = charged - self._committed
        if delta:
            self._committed = charged
            if self.running:
                cs = self._cs
                d = cs.deadline - delta
                cs.deadline = d if d > 0 else 0
        if self.scan_code:
            mm = self.mm
            if mm is not None and mm.code_gen != self._code_gen and mm.version == self.mapped_version:
                self._reset_code_view()

    def hook_intr(self, fn: Callable[[Uc, int, Any], None], fast: tuple[int, Callable[[], None]] | None = None,
                  native: Any = None) -> None:
        """Register ``fn(uc, intno, None)`` as a UC_HOOK_INTR callback straight through ctypes.

        The binding's ``hook_add`` calls a Python hook through two more Python frames (a
        dispatcher and an exception guard), about a microsecond a trap on this machine; this is
        one frame with the same guard: an exception is kept for ``emu_start`` to raise and the
        CPU stops, as the binding does.  ``fast`` = (intno, fn2): that exception number (the
        syscall instruction's) goes to ``fn2()`` directly, one frame fewer on the hottest trap.

        ``native``: a C INTR hook that handles some exceptions itself (the RISC-V vector unit's
        vsetvli, emukern.machine.rvv.native) and must therefore be the only INTR hook, since
        Unicorn calls every registered one.  It has ``fn`` (the C function, a c_void_p; None: not
        available, register the Python callback as usual), ``ptr`` (its user data), ``s`` (its
        struct: ``s.py`` is where it finds the Python callback), ``cpu`` and ``fold(packed)``.
        The C hook calls the callback for everything it does not handle, with a non-NULL third
        argument when it executed instructions Python has not seen yet: ``fold`` takes them in
        before anything else.  When the callback returns to the guest, ``s.vs`` gets
        ``cpu.vs`` (the one state the C hook decides on that the kernel changes: sstatus.VS)."""
        from unicorn import UC_HOOK_INTR
        uc = self.uc
        keep = uc_internal.keep_hook_exception
        fast_no, fast_fn = fast if fast is not None else (-1, None)
        if native is not None and native.fn is None:
            native = None

        if native is None:
            def entry(_handle: int, intno: int, packed: int | None) -> None:     # (packed: unused)
                try:
                    if intno == fast_no:
                        fast_fn()           # type: ignore[misc]
                    else:
                        fn(uc, intno, None)
                except BaseException as exc:
                    keep(uc, exc)
        else:
            fold, ns, ncpu = native.fold, native.s, native.cpu

            def entry(_handle: int, intno: int, packed: int | None) -> None:
                try:
                    if packed is not None:
                        fold(packed)
                    if intno == fast_no:
                        fast_fn()           # type: ignore[misc]
                    else:
                        fn(uc, intno, None)
                except BaseException as exc:
                    keep(uc, exc)
                ns.vs = ncpu.vs
        cb = uc_internal.INTR_CFUNC(entry)
        if native is not None:
            native.s.py = ctypes.cast(cb, ctypes.c_void_p).value
            hook_fn, user_data = native.fn, native.ptr
        else:
            hook_fn, user_data = ctypes.cast(cb, ctypes.c_void_p), None
        status, _hh = uc_internal.hook_add_native(uc, UC_HOOK_INTR, hook_fn, user_data)
        if status != 0:
            raise UcError(status)
        self._intr_cbs.append((cb, native))     # ctypes callbacks must outlive the hook

    def _faults_from_engine(self) -> None:
        """Take faulting addresses from the engine instead of the UC_HOOK_MEM_INVALID hook (kept
        when the engine's record cannot be found, or with EMUKERN_FAULT_HOOK=1).  For an architecture whose TLB fill gives data accesses no fetch permission
        (native/counter.c's ek_tlb_fill): with any memory hook installed, Unicorn would still
        send every store through its slow path.  The address is the one the hook was given."""
        rd = uc_internal.fault_reader(self.uc)
        if rd is None or os.environ.get("EMUKERN_FAULT_HOOK") == "1":
            return
        uc_internal.hook_del_py(self.uc, self._invalid_hook)
        self._fault_address, self._fault_pending = rd

    def _hook_mem_invalid(self, uc: Uc, access: int, addr: int, size: int, value: int, _ud: Any) -> bool:
        self._fault = (addr, _ACCESS.get(access, "r"))
        return False

    def _trap_from_error(self, exc: UcError) -> Trap:
        raise NotImplementedError
