"""What every simulated CPU has in common: a Unicorn instance, an exact instruction counter, a
local clock, memory attachment and the in-hook trap delivery protocol.

Trap protocol: the architecture subclass turns a Unicorn event into a :class:`Trap` and calls
``self.on_trap(cpu, trap)`` — the kernel's entry point.  That happens *inside* the Unicorn hook
when possible (resuming costs ~1 µs instead of ~14 µs for stop+restart).  The kernel sets the
registers/PC it wants and either returns (the guest continues) or calls :meth:`Cpu.stop` (the
scheduler needs the CPU: a block, an exit, a context switch).
"""
from __future__ import annotations

import ctypes
import mmap
from collections.abc import Callable, Sequence
from typing import Any

from unicorn import Uc, UcError
from unicorn.unicorn_const import UC_HOOK_MEM_INVALID

from emukern.machine.clock import Clock
from emukern.machine.counter import make_counter
from emukern.machine.memory import AddressSpace, uc_prot
from emukern.machine.trap import Trap

TrapHandler = Callable[["Cpu", Trap], None]

# unicorn.unicorn_const access types for UC_HOOK_MEM_INVALID
_ACCESS = {19: "r", 20: "w", 21: "x", 22: "r", 23: "w", 24: "x"}  # UNMAPPED (19-21) and PROT (22-24)
UNTIL_NEVER = 0xFFFF_FFFF_FFFF_FFF0

# Unicorn reserves a 1 GiB translated-code buffer per instance by default, so seven CPUs already
# need 7 GiB of address space.  Guest code in emukern is small (a static glibc program translates
# to a few MiB); 32 MiB per CPU puts 64 CPUs at 2 GiB.  When it fills, Unicorn flushes it and
# retranslates (slower, never wrong).
TB_BUFFER_SIZE = 32 << 20
_TB_PROBE_SLACK = 16 << 20      # Unicorn's other per-instance allocations come on top


def new_uc(arch: int, mode: int, what: str) -> Uc:
    """A Unicorn instance with emukern's translation-buffer size.

    QEMU inside Unicorn ends the *whole process* (``exit(1)`` after "Could not allocate dynamic
    translator buffer") when the host refuses that buffer, so the same amount of address space is
    asked for first, here, where a refusal can become a clear error."""
    from emukern.errors import ConfigError
    uc = Uc(arch, mode)
    uc.ctl_set_tcg_buffer_size(TB_BUFFER_SIZE)
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

    def __init__(self, index: int, clock: Clock, uc: Uc) -> None:
        self.index = index
        self.clock = clock
        self.uc = uc
        self.counter = make_counter(uc)
        # what holds the live count: the ctypes struct itself for the native counter (reading
        # its field directly skips a property call on the hottest path), else the counter
        self._cs = getattr(self.counter, "_s", self.counter)
        self.extra_user = 0       # user cycles beyond one per instruction (e.g. long vector ops)
        self.sys_cycles = 0       # kernel work charged by the cost model
        self.idle_cycles = 0
        self.stub_insns = 0       # instructions executed in kernel stubs (counted by the counter)
        self.mm: AddressSpace | None = None
        self._mapped: list[tuple[int, int, int, int]] = []
        self._mapped_version = -1
        self.on_trap: TrapHandler | None = None
        self.running = False
        self.stop_requested = False
        self._fault: tuple[int, str] | None = None
        self.traps_seen = 0
        self._committed = 0        # charged cycles already reflected in the counter deadline
        # Register access straight through libunicorn (the binding's generic path costs ~2x)
        from unicorn.unicorn_py3.unicorn import uclib
        self._uch = uc._uch
        self._uc_rr = uclib.uc_reg_read
        self._uc_rw = uclib.uc_reg_write
        self._uc_rrb = uclib.uc_reg_read_batch
        self._rv = ctypes.c_uint64()
        self._prv = ctypes.byref(self._rv)
        uc.hook_add(UC_HOOK_MEM_INVALID, self._hook_mem_invalid)

    # ---- fast register access ------------------------------------------------------------------
    def _read(self, regid: int) -> int:
        self._uc_rr(self._uch, regid, self._prv)
        return self._rv.value

    def _write(self, regid: int, value: int) -> None:
        self._rv.value = value & 0xFFFF_FFFF_FFFF_FFFF
        self._uc_rw(self._uch, regid, self._prv)

    def make_batch(self, regids: Sequence[int]) -> Callable[[], list[int]]:
        """A reader for a fixed list of 64-bit registers in one libunicorn call."""
        n = len(regids)
        buf = (ctypes.c_uint64 * n)()
        ptrs = (ctypes.c_void_p * n)(*[ctypes.addressof(buf) + 8 * i for i in range(n)])
        ids = (ctypes.c_int * n)(*regids)
        rrb, uch = self._uc_rrb, self._uch

        def read() -> list[int]:
            rrb(uch, ids, ptrs, n)
            return buf[:]
        read.keep = (buf, ptrs, ids)  # type: ignore[attr-defined]
        return read

    # ---- time ----------------------------------------------------------------------------------
    @property
    def now(self) -> int:
        """This CPU's local time in cycles."""
        return self._cs.count + self.extra_user + self.sys_cycles + self.idle_cycles

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

    def charge(self, cycles: int, *, user: bool = False) -> None:
        """Advance this CPU's time by kernel (or extra user) work.

        The run deadline (in instructions) is moved by the same amount when the hook returns
        (:meth:`commit_charges`), so a tick still fires at its exact cycle."""
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
        if mm is self.mm and mm.version == self._mapped_version:
            return
        want = {(m.start, m.size, uc_prot(m.perms), m.host_addr()) for m in mm.mappings}
        have = set(self._mapped)
        for start, size, _prot, _host in sorted(have - want):
            self.uc.mem_unmap(start, size)
        for start, size, prot, host in sorted(want - have):
            self.uc.mem_map_ptr(start, size, prot, host)
        self._mapped = sorted(want)
        self.mm = mm
        self._mapped_version = mm.version

    def sync_mm(self) -> None:
        if self.mm is not None and self.mm.version != self._mapped_version:
            self.attach_mm(self.mm)

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
        self.sync_mm()
        self.stop_requested = False
        budget = until - self.now
        if budget <= 0:
            return
        self.counter.deadline = self.counter.count + budget
        self._committed = self.extra_user + self.sys_cycles + self.idle_cycles
        self.running = True
        self._fault = None
        try:
            self.uc.emu_start(self.get_pc(), UNTIL_NEVER)
        except UcError as exc:
            self.running = False
            self._deliver(self._trap_from_error(exc))
        finally:
            self.running = False
            self.counter.deadline = 2**63

    def _deliver(self, trap: Trap) -> None:
        self.traps_seen += 1
        if self.on_trap is None:
            raise RuntimeError("no kernel attached to this CPU")
        self.on_trap(self, trap)
        self.commit_charges()

    def _hook_mem_invalid(self, uc: Uc, access: int, addr: int, size: int, value: int, _ud: Any) -> bool:
        self._fault = (addr, _ACCESS.get(access, "r"))
        return False

    def _trap_from_error(self, exc: UcError) -> Trap:
        raise NotImplementedError
