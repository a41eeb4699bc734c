"""The vector-configuration instructions (vsetvli, vsetivli, vsetvl) executed in C (issue 19).

A core's vector unit executes vsetvli without any trap.  emukern's RVV unit is Python, reached
through Unicorn's illegal-instruction exception; for the three configuration instructions the
Python round trip (a ctypes callback, the CPU's hook, the unit's executor) is most of their
cost, and programs run one before every strip-mined loop and, in the syscall benchmarks, in
every iteration.  So the CPU's INTR hook is the C function ``ek_rvv_intr`` (native/counter.c):
it executes those words itself and calls the CPU's Python callback for everything else.

Design: **Python mirrors, folded in at every entry.**  The RVV unit keeps ``vl``/``vtype``/
``vstart`` as plain attributes (the Python executors check them on every instruction, so they
must stay as cheap as they are), and ``RiscvCpu.vs`` stays a plain attribute (the kernel tests
it several times per syscall); the C side keeps its own ``vl``/``vtype`` and a count ``n`` of
the instructions it executed since Python last looked.  Python looks whenever it gets control:

* when the C hook calls the CPU's Python callback it passes (n, vtype, vl) packed into the
  callback's third argument (NULL when n = 0) and clears n; the callback calls
  :meth:`RvvNative.fold` before anything else (the kernel's syscall entry,
  riscv_v_vstate_save/restore, signal frames, the debugger all run after that) — no ctypes
  access to the struct on this path, which every syscall after a vsetvli takes;
* a run that ends (deadline, stop, fault) folds the struct in (:meth:`RvvNative.sync`) before
  the kernel sees the CPU again.

``fold`` sets the unit's vl and vtype (through the vtype setter when vtype changed, so the
decoded-vtype cache the Python executors rely on is rebuilt), vstart = 0, VS Dirty, and adds
the instructions and cycles to the CPU's statistics and extra_user exactly as the Python path
charges them.

``sstatus.VS`` goes the other way: the C hook needs it on every trap (VS Off is the kernel's
first-use trap, which must reach Python), so the struct gets ``cpu.vs`` whenever Python returns
to the guest (the end of every callback, and :meth:`RvvNative.arm` at a run's start).

The ``rs1 = rd = x0`` form (keep vl) needs the unit's current vl and vtype: C executes it only
while ``known`` says the struct holds them — set by :meth:`RvvNative.arm` when a run starts and
by C after each instruction it executes, cleared by C whenever it calls into Python (which may
change the state).  Otherwise Python executes it: same result, a trap slower.

Native execution is off (``on`` = 0, everything through Python, as before) without the C
library (no compiler, ``EMUKERN_PURE_PYTHON``), with per-instruction counting
(``EMUKERN_EXACT_COUNT``, the debugger) and when the CPU's ``batch_vector`` is off (the
debugger: every vector instruction one observable trap) and with ``EMUKERN_NATIVE_VSET=0`` (read
when the CPU is built: the tests compare both paths).
"""
from __future__ import annotations

import ctypes
import os
from typing import Any, Protocol

from emukern.machine import counter as _counter


class _VectorCpu(Protocol):
    """What the native vset path reads and writes of the RISC-V CPU that owns it (typed here,
    not as cpu_riscv.RiscvCpu, which imports this module: the package stays an acyclic layer)."""

    rvv: Any
    vs: int
    vlen: int
    counter: Any
    extra_user: int
    vector_insns: int
    vector_cycles: int
    _committed: int

    batch_vector: bool

_MANY = 0x3FFFFF        # EK_RVV_MANY in counter.c
VILL = 1 << 63
RvvStruct = _counter.RvvStruct
native_intr_fn = _counter.native_rvv_intr


def enabled() -> bool:
    """False when ``EMUKERN_NATIVE_VSET=0``: every vector word through the Python unit."""
    return os.environ.get("EMUKERN_NATIVE_VSET", "1") != "0"


class RvvNative:
    """One hart's C-side vector-configuration state (see the module docstring)."""

    def __init__(self, cpu: "_VectorCpu", pc_reg: int, x0_reg: int) -> None:
        self.cpu = cpu
        self.s = RvvStruct()
        s = self.s
        s.vlen = cpu.vlen
        s.pc_reg = pc_reg
        s.x0_reg = x0_reg
        s.cost = self.cost = 1
        cnt = cpu.counter
        sp = getattr(cnt, "_sp", None)
        s.counter = sp.value if sp is not None else None
        self.fn = native_intr_fn() if cpu.rvv is not None and sp is not None else None
        self.enabled = enabled()
        self.ptr = ctypes.cast(ctypes.pointer(s), ctypes.c_void_p)
        if cpu.rvv is not None:
            cpu.rvv.on_costs = self._costs_changed

    def _costs_changed(self) -> None:
        """The cost table changed (``--cost rvv.vsetvl.*``): what C executed so far is charged
        at the old cost, the rest at the new one."""
        self.sync()
        if self.s.on:
            self.s.cost = self.cost = self.cpu.rvv._result("vsetvl", 0, True).cycles

    @property
    def available(self) -> bool:
        """The C hook is installed (the library built and the hart has V)."""
        return self.fn is not None

    @property
    def handled(self) -> int:
        """Instructions the C hook executed so far (statistics)."""
        return self.s.handled

    def arm(self) -> None:
        """A run starts: native execution on or off for it, and the unit's vl/vtype/cost."""
        s = self.s
        cpu = self.cpu
        on = self.fn is not None and self.enabled and cpu.batch_vector and not getattr(cpu.counter, "exact", True)
        s.on = int(on)
        if on:
            rvv = cpu.rvv
            s.vl = rvv.vl
            s.vtype = rvv._vtype
            s.known = 1
            s.cost = self.cost = rvv._result("vsetvl", 0, True).cycles
            s.vs = cpu.vs
        else:
            s.known = 0

    def fold(self, packed: int) -> None:
        """What C executed since Python last looked, packed by ek_rvv_pack (n, vtype, vl: no
        ctypes access on the way), into the unit and the CPU's statistics: the Python path's
        effects (vl, vtype (decoded), vstart = 0, VS Dirty, vector_insns, vector_cycles,
        extra_user and the charges committed to the deadline, which C has already moved)."""
        n = packed & _MANY
        if n == _MANY:
            s = self.s
            n = s.n
            s.n = 0
        cpu = self.cpu
        rvv = cpu.rvv
        vt = (packed >> 22) & 0x1FF
        if vt & 0x100:
            vt = VILL
        if vt != rvv._vtype:
            rvv.vtype = vt          # the setter: _vt, the decode the executors use, with it
        rvv.vl = packed >> 31
        rvv.vstart = 0
        cpu.vs = 3                  # VS Dirty
        cpu.vector_insns += n
        cost = self.cost            # (one cost per run: arm sets it, the run's end syncs)
        cpu.vector_cycles += n * cost
        if cost != 1:
            extra = n * (cost - 1)
            cpu.extra_user += extra
            cpu._committed += extra

    def sync(self) -> None:
        """:meth:`fold` from the struct itself (a run's end, a fault: no callback argument)."""
        s = self.s
        n = s.n
        if not n:
            return
        s.n = 0
        vt = s.vtype
        self.fold((n if n < _MANY else _MANY) | (0x100 if vt == VILL else vt & 0xFF) << 22 | s.vl << 31)
