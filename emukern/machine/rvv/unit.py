"""The RVV 1.0 vector unit: architectural state plus the instruction dispatcher.

Policy choices (the spec leaves these to the implementation):

* **Tail and masked-off elements are left undisturbed**, whatever vta/vma say.  "Agnostic"
  allows undisturbed, and it matches QEMU 7.2's default (its ``rvv_ta_all_1s`` option is off
  and it has no mask-agnostic fill), so differential tests are deterministic.
* **Mask destinations** (compares, vmand.mm & co., vlm.v) write only bits vstart..vl-1 (and
  only active ones for masked compares); the tail bits of the mask register are also left
  undisturbed, which the spec's "always tail-agnostic" rule permits.
* **vl = min(AVL, VLMAX)** for every vsetvl*.  ``vsetvli x0, x0, ...`` keeps vl when the new
  vtype has the same VLMAX as the current one; otherwise (including when vtype is currently
  vill) it sets vill and vl=0, one of the behaviours the spec allows for this reserved use.
* Reductions (widening ones too), vcpop.m, vfirst.m, vcompress.vm, viota.m and
  vmsbf/vmsif/vmsof.m raise IllegalInstruction when vstart != 0 (allowed by the spec).
  Reductions with vl=0 leave vd untouched.
* Indexed and segment accesses run in element order (a legal order for the unordered forms
  too); a fault sets vstart to the faulting segment, as for unit-stride.
* A memory fault inside a load/store sets vstart to the faulting element, keeps the elements
  before it, and re-raises the MemoryFault.  Because vstart changed, the CPU should treat
  the vector state as dirty whenever ``unit.vstart != 0`` after such a fault.
* ELEN is 64 and XLEN is 64; the integer, fixed-point, mask, permutation and load/store
  instructions of RVV 1.0 are implemented, floating-point ones are not.  Everything else in
  the vector encoding space raises IllegalInstruction naming the instruction.

``dlen`` (datapath width, the spec's DLEN) only feeds the cost model; it defaults to VLEN,
i.e. an LMUL=1 operation takes one beat.
"""
from __future__ import annotations

import struct
from collections.abc import Callable

from ...errors import IllegalInstruction
from . import cost as _cost
from .fast import Fast, specialize
from .insn import Insn
from .types import ExecResult, VectorMemory, XRegs
from .vtype import VILL, VType, decode_vtype

_CODES = ("B", "H", "I", "Q")
_SCODES = ("b", "h", "i", "q")
_CACHE_LIMIT = 1 << 16


class RVVUnit:
    """Vector register file, vector CSRs, and an ``execute`` entry point for one hart."""

    def __init__(self, vlen: int = 256, elen: int = 64, dlen: int | None = None) -> None:
        if vlen < 64 or vlen > 65536 or vlen & (vlen - 1):
            raise ValueError(f"VLEN must be a power of two in 64..65536, not {vlen}")
        if elen != 64:
            raise ValueError("emukern's RVV unit implements ELEN=64 only")
        self.vlen = vlen
        self.vlenb = vlen // 8
        self.elen = elen
        self.dlen = dlen if dlen is not None else vlen
        if self.dlen <= 0 or self.dlen > vlen or self.dlen & (self.dlen - 1):
            raise ValueError(f"DLEN must be a power of two no larger than VLEN, not {dlen}")
        self.v = bytearray(32 * self.vlenb)
        self.vl = 0
        self._vtype = VILL
        self._vt: VType | None = None
        self.vstart = 0
        self.vxrm = 0
        self.vxsat = 0
        self._decoded: dict[int, Insn] = {}
        # word -> decoded Insn, for callers that run ``d.run(unit, d, x, mem)`` themselves on a
        # hit (the CPU's vector loop) and call :meth:`execute` on a miss
        self.decoded = self._decoded
        # word -> an executor specialised for the current vtype/vl (see :mod:`.fast`); the CPU's
        # vector loop calls ``fast[word](x, mem)`` on a hit and :meth:`execute` on a miss
        self.fast: dict[int, Fast] = {}
        self._structs: dict[tuple[str, int], struct.Struct] = {}
        self._results: dict[tuple[str, int, bool], ExecResult] = {}
        self.cost_params: dict[str, float] = dict(_cost.DEFAULT_COSTS)
        # called after set_costs (the CPU's native vsetvli path holds the vsetvl cost)
        self.on_costs: Callable[[], None] | None = None
        self.reset()

    # ---- state -------------------------------------------------------------------------
    def reset(self) -> None:
        """Zero all vector registers and CSRs; vtype becomes vill (bit 63 only)."""
        self.v[:] = bytes(len(self.v))
        self.vl = 0
        self.vtype = VILL
        self.vstart = 0
        self.vxrm = 0
        self.vxsat = 0

    @property
    def vtype(self) -> int:
        return self._vtype

    @vtype.setter
    def vtype(self, raw: int) -> None:
        # Writing an unsupported value leaves vtype = vill, exactly like vsetvl would.
        vt = decode_vtype(raw, self.vlen, self.elen)
        self._vt = vt
        self._vtype = vt.raw if vt is not None else VILL

    @property
    def vill(self) -> bool:
        return self._vt is None

    @property
    def vlmax(self) -> int:
        return self._vt.vlmax if self._vt is not None else 0

    def set_costs(self, params: dict[str, float]) -> None:
        """Override cost-model constants (see :data:`cost.DEFAULT_COSTS`)."""
        self.cost_params.update(params)
        self._results.clear()
        self.fast.clear()         # the specialised executors hold cost results
        if self.on_costs is not None:
            self.on_costs()

    # ---- debugger / kernel helpers -------------------------------------------------------
    def read_vreg(self, i: int) -> bytes:
        """Register ``v<i>``: VLENB bytes, element 0 first (little-endian elements).  Tests and
        tools reach it as ``cpu.vreg(i)`` (:class:`emukern.machine.cpu_riscv.RiscvCpu`)."""
        if not 0 <= i < 32:
            raise ValueError(f"no vector register v{i}")
        return bytes(self.v[i * self.vlenb:(i + 1) * self.vlenb])

    def write_vreg(self, i: int, data: bytes) -> None:
        """Write register ``i``; data longer than VLENB (a multiple of it) fills v(i+1)..."""
        n = len(data)
        if not 0 <= i < 32 or n == 0 or n % self.vlenb or i * self.vlenb + n > len(self.v):
            raise ValueError(f"cannot write {n} bytes to v{i} (VLENB={self.vlenb})")
        self.v[i * self.vlenb:i * self.vlenb + n] = data

    def elements(self, i: int, sew: int, count: int | None = None) -> list[int]:
        """Unsigned SEW-bit elements starting at v``i``; default one register's worth.
        ``count`` may run on into the following registers (a register group)."""
        if sew not in (8, 16, 32, 64):
            raise ValueError(f"SEW must be 8/16/32/64, not {sew}")
        eb = sew // 8
        if count is None:
            count = self.vlenb // eb
        if not 0 <= i < 32 or count < 0 or i * self.vlenb + count * eb > len(self.v):
            raise ValueError(f"v{i} has no {count} elements of e{sew}")
        return list(self._read(i, (8, 16, 32, 64).index(sew), 0, count))

    # ---- execution -----------------------------------------------------------------------
    def execute(self, word: int, x: XRegs, mem: VectorMemory) -> ExecResult:
        """Execute one vector instruction word (OP-V, vector load/store, vector CSR access).

        Raises IllegalInstruction for reserved/unimplemented words and MemoryFault (with
        vstart set to the faulting element) for a trapping access.
        """
        f = self.fast.get(word)
        if f is not None:
            return f(x, mem)      # it checks vtype/vl/vstart itself (and re-specialises)
        d = self._decoded.get(word)
        if d is None:
            from .decode import decode  # late import: decode imports the handlers
            d = decode(word & 0xFFFFFFFF)
            if len(self._decoded) >= _CACHE_LIMIT:
                self._decoded.clear()
                self.fast.clear()
            self._decoded[word] = d
        f = specialize(self, d)
        if f is None:
            return d.run(self, d, x, mem)
        self.fast[word] = f
        return f(x, mem)

    def _respecialize(self, word: int, x: XRegs, mem: VectorMemory) -> ExecResult:
        """A specialised executor found vtype, vl or vstart changed: drop it and execute
        through :meth:`execute` (which builds one for the new state when it can)."""
        del self.fast[word]
        return self.execute(word, x, mem)

    # ---- helpers used by the handlers ------------------------------------------------------
    def _struct(self, code: str, n: int) -> struct.Struct:
        s = self._structs.get((code, n))
        if s is None:
            s = self._structs[(code, n)] = struct.Struct(f"<{n}{code}")
        return s

    def _read(self, reg: int, sl: int, start: int, n: int, signed: bool = False) -> tuple[int, ...]:
        """n elements of width 8<<sl from register group ``reg`` beginning at index start."""
        code = _SCODES[sl] if signed else _CODES[sl]
        return self._struct(code, n).unpack_from(self.v, reg * self.vlenb + (start << sl))

    def _write(self, reg: int, sl: int, start: int, vals: list[int] | tuple[int, ...]) -> None:
        self._struct(_CODES[sl], len(vals)).pack_into(self.v, reg * self.vlenb + (start << sl),
                                                      *vals)

    def _reg_int(self, reg: int) -> int:
        """Register ``reg`` as one little-endian integer (bit i = mask element i)."""
        b = self.vlenb
        return int.from_bytes(self.v[reg * b:(reg + 1) * b], "little")

    def _set_reg_int(self, reg: int, value: int) -> None:
        b = self.vlenb
        self.v[reg * b:(reg + 1) * b] = value.to_bytes(b, "little")

    def _mask_str(self, start: int, n: int) -> str:
        """Mask bits start..start+n-1 of v0 as a '0'/'1' string, element start first."""
        m = (self._reg_int(0) >> start) & ((1 << n) - 1)
        return format(m, "b").zfill(n)[::-1]

    def _result(self, kind: str, emul_log2: int, dirty: bool) -> ExecResult:
        key = (kind, emul_log2, dirty)
        r = self._results.get(key)
        if r is None:
            cyc = _cost.vector_cost(kind, 2.0 ** emul_log2, self.vlen, self.dlen,
                                    self.cost_params)
            r = self._results[key] = ExecResult(cyc, dirty)
        return r

    def _illegal(self, d: Insn, why: str) -> IllegalInstruction:
        return IllegalInstruction(d.word, f"{d.name}: {why}")

    def _vill_error(self, d: Insn) -> IllegalInstruction:
        return IllegalInstruction(d.word, f"{d.name} needs a valid vtype but vill is set")

    def _need_vtype(self, d: Insn) -> VType:
        vt = self._vt
        if vt is None:
            raise self._vill_error(d)
        return vt
