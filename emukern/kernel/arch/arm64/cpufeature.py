"""arm64 ID-register sanitisation and EL0 ``MRS`` emulation, after Linux.

What is modelled
================
Linux (``arch/arm64/kernel/cpufeature.c``) keeps, for every tracked ID
register, a description of its feature fields (``struct arm64_ftr_bits``):
shift, width, signedness, whether the field is visible to EL0, and how two
differing values are reconciled.  From the per-CPU raw values it builds a
*system-wide safe* ("sanitised") value: the boot CPU's value restricted to the
described fields, folded with every secondary CPU's value field by field
(``init_cpu_ftr_reg()`` then ``update_cpu_ftr_reg()``).  The reconciliation
rules (``arm64_ftr_safe_value()``) are:

* ``LOWER_SAFE``  - the smaller value wins (signed compare for signed fields,
  so e.g. FP = 0b1111 "not implemented" (-1) beats FP = 0b0001);
* ``HIGHER_SAFE`` - the larger value wins;
* ``HIGHER_OR_ZERO_SAFE`` - 0 if either is 0, else the larger;
* ``EXACT``       - if CPUs disagree the field becomes a fixed safe value.

Bits not covered by any field are treated as RES0 and read as 0.

EL0 cannot normally read ID registers.  Since Linux 4.11 (``HWCAP_CPUID``) an
EL0 ``MRS`` in the space ``Op0=3, Op1=0, CRn=0, CRm={0, 2..7}`` traps to the
kernel, which emulates it (``emulate_mrs``/``do_emulate_mrs()`` ->
``emulate_sys_reg()``) following
``Documentation/arch/arm64/cpu-feature-registers.rst``:

* CRm == 0: ``MIDR_EL1`` returns the *current* CPU's raw MIDR; ``MPIDR_EL1``
  returns ``SYS_MPIDR_SAFE_VAL`` (only bit 31, which is RES1);
  ``REVIDR_EL1`` returns 0 (IMPLEMENTATION DEFINED).  Any other CRm=0 encoding
  is not emulated -> SIGILL.
* Tracked registers return ``arm64_ftr_reg_user_value()``:
  ``user_val | (sys_val & user_mask)`` - visible fields carry the sanitised
  value, hidden fields carry the field's *safe value* (not necessarily 0:
  ID_AA64PFR0_EL1.EL0/EL1 read 0b0001 "AArch64 only", the MMFR0 granule fields
  read "not supported", ID_AA64DFR0_EL1.DebugVer reads 0x6), and untracked
  bits read 0.
* Untracked registers in the space (IMPLEMENTATION DEFINED such as
  ID_AA64AFR0_EL1, or reserved encodings) read as 0.
* Anything outside the space is not emulated (the caller sends SIGILL).

Version note
------------
The tables follow the field set documented in cpu-feature-registers.rst as of
roughly Linux v6.6-v6.8 (ID_AA64ISAR2_EL1 exposes CSSC/RPRFM/BC/MOPS/APA3/
GPA3/RPRES/WFxT, ID_AA64ZFR0_EL1 exposes B16B16) with the field attributes of
the matching ``arm64_ftr_bits`` tables.  Registers tracked only by later
kernels (ID_AA64MMFR3_EL1, ID_AA64PFR2_EL1, ID_AA64ISAR3_EL1, ...) are
untracked here and read as 0.  Fields marked ``FTR_VISIBLE_IF_IS_ENABLED``
are visible assuming the usual defconfig (SVE, SME, MTE, BTI, PTR_AUTH all
enabled); pass ``disabled_configs`` to model a kernel built without one.
Kernel command-line ID-register overrides (``arm64.nosve`` ...) are not
modelled.
"""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass, field as dc_field, replace
from types import MappingProxyType
from typing import Iterable, Mapping, Sequence

from .sysreg import SYSREGS, SysReg, decode_esr_sys64_iss, decode_mrs, sysreg
from emukern.machine.arm64_idregs import CPU_MODELS, QEMU_MAX_FIELDS
from emukern.machine.cpu_arm64 import ARM64_MODEL_MAX, read_model_sysregs

__all__ = [
    "FtrType",
    "FtrField",
    "FtrReg",
    "FTR_REGS",
    "IDENT_FIELDS",
    "FIELD_ALIASES",
    "AARCH32_ID_REGS",
    "SYS_MPIDR_SAFE_VAL",
    "MASK64",
    "safe_field_value",
    "sanitise",
    "user_view",
    "decode_fields",
    "field_value",
    "set_field",
    "is_emulated",
    "CpuIdRegs",
    "SystemIdRegs",
    "try_emulate_mrs_value",
    "try_emulate_mrs_esr",
    "apply_id_override",
    "build_cpu_id_regs",
    "parse_cpu_id_override",
]

MASK64 = (1 << 64) - 1

#: Linux ``SYS_MPIDR_SAFE_VAL``: MPIDR_EL1 with only bit 31 (RES1) set
#: (U=0, MT=0, all affinity levels 0).
SYS_MPIDR_SAFE_VAL = 1 << 31

# Config symbols used by FTR_VISIBLE_IF_IS_ENABLED() in the modelled tables.
CONFIG_SVE = "CONFIG_ARM64_SVE"
CONFIG_SME = "CONFIG_ARM64_SME"
CONFIG_MTE = "CONFIG_ARM64_MTE"
CONFIG_BTI = "CONFIG_ARM64_BTI"
CONFIG_PTR_AUTH = "CONFIG_ARM64_PTR_AUTH"


class FtrType(enum.Enum):
    """How differing per-CPU field values are reconciled (``enum ftr_type``)."""

    EXACT = "exact"
    LOWER_SAFE = "lower_safe"
    HIGHER_SAFE = "higher_safe"
    HIGHER_OR_ZERO_SAFE = "higher_or_zero_safe"


@dataclass(frozen=True)
class FtrField:
    """One feature field of an ID register (Linux ``struct arm64_ftr_bits``).

    ``safe_val`` is stored as the raw field bits (e.g. 0xf for the signed
    "not implemented" value of ID_AA64PFR0_EL1.FP), exactly as Linux stores it.
    ``config`` names the Kconfig symbol of ``FTR_VISIBLE_IF_IS_ENABLED`` fields.
    """

    name: str
    shift: int
    width: int = 4
    visible: bool = False
    signed: bool = False
    type: FtrType = FtrType.LOWER_SAFE
    safe_val: int = 0
    strict: bool = True
    config: str | None = None

    def __post_init__(self) -> None:
        if self.width <= 0 or self.shift < 0 or self.shift + self.width > 64:
            raise ValueError(f"{self.name}: bad shift/width {self.shift}/{self.width}")
        if not 0 <= self.safe_val < (1 << self.width):
            raise ValueError(f"{self.name}: safe_val {self.safe_val:#x} does not fit")

    @property
    def mask(self) -> int:
        """In-register mask of the field (Linux ``arm64_ftr_mask()``)."""
        return ((1 << self.width) - 1) << self.shift

    @property
    def msb(self) -> int:
        return self.shift + self.width - 1

    def raw(self, reg_value: int) -> int:
        """Unsigned field bits."""
        return (reg_value >> self.shift) & ((1 << self.width) - 1)

    def extract(self, reg_value: int) -> int:
        """Field value, sign-extended for signed fields (``arm64_ftr_value()``)."""
        v = self.raw(reg_value)
        if self.signed and v & (1 << (self.width - 1)):
            v -= 1 << self.width
        return v

    def insert(self, reg_value: int, value: int) -> int:
        """Return ``reg_value`` with this field set to ``value`` (``arm64_ftr_set_value()``).

        Negative values are accepted (two's complement within the field)."""
        return (reg_value & ~self.mask & MASK64) | ((value << self.shift) & self.mask)

    def is_visible(self, disabled_configs: Iterable[str] = ()) -> bool:
        """Visibility to EL0, honouring ``FTR_VISIBLE_IF_IS_ENABLED``."""
        if not self.visible:
            return False
        return self.config is None or self.config not in set(disabled_configs)


@dataclass(frozen=True)
class FtrReg:
    """An ID register tracked by Linux's feature framework (``struct arm64_ftr_reg``)."""

    name: str
    fields: tuple[FtrField, ...]
    aarch32: bool = False

    @property
    def valid_mask(self) -> int:
        m = 0
        for f in self.fields:
            m |= f.mask
        return m

    def user_mask(self, disabled_configs: Iterable[str] = ()) -> int:
        """Mask of EL0-visible fields (``reg->user_mask``)."""
        disabled = frozenset(disabled_configs)
        m = 0
        for f in self.fields:
            if f.is_visible(disabled):
                m |= f.mask
        return m

    def user_val(self, disabled_configs: Iterable[str] = ()) -> int:
        """Safe values of the hidden fields (``reg->user_val``)."""
        disabled = frozenset(disabled_configs)
        v = 0
        for f in self.fields:
            if not f.is_visible(disabled):
                v = f.insert(v, f.safe_val)
        return v

    @property
    def strict_mask(self) -> int:
        """Bits that must match the boot CPU to avoid a SANITY CHECK taint."""
        m = MASK64
        for f in self.fields:
            if not f.strict:
                m &= ~f.mask
        return m & MASK64

    def field(self, name: str) -> FtrField:
        name = _canon_field(self.name, name)
        for f in self.fields:
            if f.name.upper() == name.upper():
                return f
        raise KeyError(f"{self.name} has no field {name!r}")

    @property
    def sysreg(self) -> SysReg:
        return SYSREGS[self.name]


# ---------------------------------------------------------------------------
# Field tables.  Each row: name, shift, width, visibility, sign, type, safe
# value.  Rows are in descending shift order like Linux requires
# (sort_ftr_regs() warns otherwise).
# ---------------------------------------------------------------------------
_L = FtrType.LOWER_SAFE
_H = FtrType.HIGHER_SAFE
_X = FtrType.EXACT


def _vis(name: str, shift: int, *, width: int = 4, signed: bool = False,
         type: FtrType = _L, safe: int = 0, strict: bool = True,
         config: str | None = None) -> FtrField:
    """A field EL0 can see (``FTR_VISIBLE`` / ``FTR_VISIBLE_IF_IS_ENABLED``)."""
    return FtrField(name, shift, width, True, signed, type, safe, strict, config)


def _hid(name: str, shift: int, *, width: int = 4, signed: bool = False,
         type: FtrType = _L, safe: int = 0, strict: bool = True) -> FtrField:
    """A field hidden from EL0 (``FTR_HIDDEN``): EL0 reads ``safe``."""
    return FtrField(name, shift, width, False, signed, type, safe, strict, None)


def _generic32(prefix: str = "F") -> tuple[FtrField, ...]:
    """Linux ``ftr_generic_32bits``: eight hidden, strict, lower-safe nibbles."""
    return tuple(_hid(f"{prefix}{s}", s) for s in range(28, -1, -4))


_TABLES: dict[str, tuple[FtrField, ...]] = {
    # ---- CRm = 4 -----------------------------------------------------------
    "ID_AA64PFR0_EL1": (
        _hid("CSV3", 60, strict=False),
        _hid("CSV2", 56, strict=False),
        _vis("DIT", 48),
        _hid("AMU", 44, strict=False),
        _hid("MPAM", 40),
        _hid("SEL2", 36, strict=False),
        _vis("SVE", 32, config=CONFIG_SVE),
        _hid("RAS", 28),
        _hid("GIC", 24),
        # 0b1111 = not implemented; signed so that "missing" is the minimum.
        _vis("AdvSIMD", 20, signed=True, safe=0xF),
        _vis("FP", 16, signed=True, safe=0xF),
        _hid("EL3", 12, strict=False),
        _hid("EL2", 8, strict=False),
        # Hidden with safe value 0b0001 (ELx_64BIT_ONLY): EL0 always reads 1.
        _hid("EL1", 4, strict=False, safe=0x1),
        _hid("EL0", 0, strict=False, safe=0x1),
    ),
    "ID_AA64PFR1_EL1": (
        _vis("SME", 24, config=CONFIG_SME),
        _hid("MPAM_frac", 16),
        _hid("RAS_frac", 12),
        _vis("MTE", 8, config=CONFIG_MTE),
        _vis("SSBS", 4, strict=False),
        _vis("BT", 0, config=CONFIG_BTI),
    ),
    "ID_AA64ZFR0_EL1": (
        _vis("F64MM", 56, config=CONFIG_SVE),
        _vis("F32MM", 52, config=CONFIG_SVE),
        _vis("I8MM", 44, config=CONFIG_SVE),
        _vis("SM4", 40, config=CONFIG_SVE),
        _vis("SHA3", 32, config=CONFIG_SVE),
        _vis("B16B16", 24, config=CONFIG_SVE),
        _vis("BF16", 20, config=CONFIG_SVE),
        _vis("BitPerm", 16, config=CONFIG_SVE),
        _vis("AES", 4, config=CONFIG_SVE),
        _vis("SVEver", 0, config=CONFIG_SVE),
    ),
    # All SME fields are EXACT with safe value 0; several are single bits.
    "ID_AA64SMFR0_EL1": (
        _vis("FA64", 63, width=1, type=_X, config=CONFIG_SME),
        _vis("SMEver", 56, type=_X, config=CONFIG_SME),
        _vis("I16I64", 52, type=_X, config=CONFIG_SME),
        _vis("F64F64", 48, width=1, type=_X, config=CONFIG_SME),
        _vis("I16I32", 44, type=_X, config=CONFIG_SME),
        _vis("B16B16", 43, width=1, type=_X, config=CONFIG_SME),
        _vis("F16F16", 42, width=1, type=_X, config=CONFIG_SME),
        _vis("I8I32", 36, type=_X, config=CONFIG_SME),
        _vis("F16F32", 35, width=1, type=_X, config=CONFIG_SME),
        _vis("B16F32", 34, width=1, type=_X, config=CONFIG_SME),
        _vis("BI32I32", 33, width=1, type=_X, config=CONFIG_SME),
        _vis("F32F32", 32, width=1, type=_X, config=CONFIG_SME),
    ),
    # ---- CRm = 5 -----------------------------------------------------------
    "ID_AA64DFR0_EL1": (
        _hid("DoubleLock", 36, signed=True),
        _hid("PMSVer", 32, strict=False),
        _hid("CTX_CMPs", 28),
        _hid("WRPs", 20),
        _hid("BRPs", 12),
        # Heterogeneous PMUs are allowed; mismatch -> 0.
        _hid("PMUVer", 8, signed=True, type=_X, strict=False),
        # Mismatch -> 0x6 (Armv8 debug); EL0 always reads 0x6.
        _hid("DebugVer", 0, type=_X, safe=0x6),
    ),
    # Linux tracks ID_AA64DFR1_EL1 with an empty table (ftr_raz): reads 0.
    "ID_AA64DFR1_EL1": (),
    # ---- CRm = 6 -----------------------------------------------------------
    "ID_AA64ISAR0_EL1": (
        _vis("RNDR", 60),
        _hid("TLB", 56),
        _vis("TS", 52),
        _vis("FHM", 48),
        _vis("DP", 44),
        _vis("SM4", 40),
        _vis("SM3", 36),
        _vis("SHA3", 32),
        _vis("RDM", 28),
        _vis("ATOMIC", 20),
        _vis("CRC32", 16),
        _vis("SHA2", 12),
        _vis("SHA1", 8),
        _vis("AES", 4),
    ),
    "ID_AA64ISAR1_EL1": (
        _vis("I8MM", 52),
        _vis("DGH", 48),
        _vis("BF16", 44),
        _hid("SPECRES", 40),
        _vis("SB", 36),
        _vis("FRINTTS", 32),
        _vis("GPI", 28, config=CONFIG_PTR_AUTH),
        _vis("GPA", 24, config=CONFIG_PTR_AUTH),
        _vis("LRCPC", 20),
        _vis("FCMA", 16),
        _vis("JSCVT", 12),
        # Pointer-auth algorithms must match exactly; mismatch -> 0 (none).
        _vis("API", 8, type=_X, config=CONFIG_PTR_AUTH),
        _vis("APA", 4, type=_X, config=CONFIG_PTR_AUTH),
        _vis("DPB", 0),
    ),
    "ID_AA64ISAR2_EL1": (
        _vis("CSSC", 52, strict=False),
        _vis("RPRFM", 48, strict=False),
        _hid("CLRBHB", 28),
        # v6.6 made BC visible as HIGHER_SAFE; later kernels corrected it to
        # LOWER_SAFE, which is what is modelled.
        _vis("BC", 20),
        _vis("MOPS", 16),
        _vis("APA3", 12, type=_X, config=CONFIG_PTR_AUTH),
        _vis("GPA3", 8, config=CONFIG_PTR_AUTH),
        _vis("RPRES", 4, strict=False),
        _vis("WFxT", 0, strict=False),
    ),
    # ---- CRm = 7 -----------------------------------------------------------
    "ID_AA64MMFR0_EL1": (
        _vis("ECV", 60),
        _hid("FGT", 56),
        _hid("EXS", 44),
        # Stage-2 granule support: mismatch -> 1 ("as stage 1"); EL0 reads 1.
        _hid("TGRAN4_2", 40, type=_X, safe=0x1, strict=False),
        _hid("TGRAN64_2", 36, type=_X, safe=0x1, strict=False),
        _hid("TGRAN16_2", 32, type=_X, safe=0x1, strict=False),
        # Stage-1 granules; hidden, so EL0 reads the "not implemented" value.
        _hid("TGRAN4", 28, signed=True, safe=0xF, strict=False),
        _hid("TGRAN64", 24, signed=True, safe=0xF, strict=False),
        _hid("TGRAN16", 20, safe=0x0, strict=False),
        _hid("BIGENDEL0", 16),
        _hid("SNSMEM", 12, strict=False),
        _hid("BIGEND", 8),
        _hid("ASIDBITS", 4),
        _hid("PARANGE", 0, strict=False),
    ),
    "ID_AA64MMFR1_EL1": (
        _hid("TIDCP1", 52, strict=False),
        _vis("AFP", 44),
        _hid("ETS", 36),
        _hid("TWED", 32),
        _hid("XNX", 28),
        _hid("SpecSEI", 24, type=_H),
        _hid("PAN", 20),
        _hid("LO", 16),
        _hid("HPDS", 12),
        _hid("VH", 8),
        _hid("VMIDBits", 4),
        _hid("HAFDBS", 0),
    ),
    "ID_AA64MMFR2_EL1": (
        _hid("E0PD", 60, strict=False),
        _hid("EVT", 56),
        _hid("BBM", 52),
        _hid("TTL", 48),
        _hid("FWB", 40),
        _hid("IDS", 36),
        _vis("AT", 32),
        _hid("ST", 28),
        _hid("NV", 24),
        _hid("CCIDX", 20),
        _hid("VARange", 16),
        _hid("IESB", 12, strict=False),
        _hid("LSM", 8),
        _hid("UAO", 4),
        _hid("CnP", 0),
    ),
    # ---- AArch32 ID registers (CRm = 1..3) ---------------------------------
    # Only initialised when the boot CPU supports AArch32 at EL0.
    "ID_PFR0_EL1": (
        _hid("DIT", 24),
        _hid("CSV2", 16, strict=False),
        _hid("State3", 12),
        _hid("State2", 8),
        _hid("State1", 4),
        _hid("State0", 0),
    ),
    "ID_PFR1_EL1": (
        _hid("GIC", 28),
        _hid("Virt_frac", 24),
        _hid("Sec_frac", 20),
        _hid("GenTimer", 16),
        _hid("Virtualization", 12),
        _hid("MProgMod", 8),
        _hid("Security", 4),
        _hid("ProgMod", 0),
    ),
    "ID_DFR0_EL1": (
        _hid("PerfMon", 24, signed=True, type=_X, strict=False),
        _hid("MProfDbg", 20),
        _hid("MMapTrc", 16),
        _hid("CopTrc", 12),
        _hid("MMapDbg", 8),
        _hid("CopSDbg", 4),
        _hid("CopDbg", 0),
    ),
    "ID_MMFR0_EL1": (
        _hid("InnerShr", 28, signed=True, safe=0xF),
        _hid("FCSE", 24),
        _hid("AuxReg", 20, strict=False),
        _hid("TCM", 16),
        _hid("ShareLvl", 12),
        _hid("OuterShr", 8, signed=True, safe=0xF),
        _hid("PMSA", 4),
        _hid("VMSA", 0),
    ),
    "ID_MMFR1_EL1": _generic32(),
    "ID_MMFR2_EL1": _generic32(),
    "ID_MMFR3_EL1": _generic32(),
    "ID_ISAR0_EL1": (
        _hid("Divide", 24),
        _hid("Debug", 20),
        _hid("Coproc", 16),
        _hid("CmpBranch", 12),
        _hid("BitField", 8),
        _hid("BitCount", 4),
        _hid("Swap", 0),
    ),
    "ID_ISAR1_EL1": _generic32(),
    "ID_ISAR2_EL1": _generic32(),
    "ID_ISAR3_EL1": _generic32(),
    "ID_ISAR4_EL1": (
        _hid("SWP_frac", 28),
        _hid("PSR_M", 24),
        _hid("SynchPrim_frac", 20),
        _hid("Barrier", 16),
        _hid("SMC", 12),
        _hid("Writeback", 8),
        _hid("WithShifts", 4),
        _hid("Unpriv", 0),
    ),
    "ID_ISAR5_EL1": (
        _hid("RDM", 24),
        _vis("CRC32", 16),
        _vis("SHA2", 12),
        _vis("SHA1", 8),
        _vis("AES", 4),
        _hid("SEVL", 0),
    ),
    "ID_MMFR4_EL1": (
        _hid("EVT", 28),
        _hid("CCIDX", 24),
        _hid("LSM", 20),
        _hid("HPDS", 16),
        _hid("CnP", 12),
        _hid("XNX", 8),
        _hid("AC2", 4),
        _hid("SpecSEI", 0, type=_H),
    ),
    "ID_ISAR6_EL1": (
        _vis("I8MM", 24),
        _vis("BF16", 20),
        _hid("SPECRES", 16),
        _vis("SB", 12),
        _vis("FHM", 8),
        _vis("DP", 4),
        _hid("JSCVT", 0),
    ),
    "MVFR0_EL1": (
        _hid("FPRound", 28),
        _hid("FPShVec", 24),
        _hid("FPSqrt", 20),
        _hid("FPDivide", 16),
        _hid("FPTrap", 12),
        _vis("FPDP", 8),
        _hid("FPSP", 4),
        _hid("SIMDReg", 0),
    ),
    # Note: the kernel table also exposes FPHP and SIMDHP, which the
    # document's MVFR1 table does not list; the code is what EL0 observes.
    "MVFR1_EL1": (
        _vis("SIMDFMAC", 28),
        _vis("FPHP", 24),
        _vis("SIMDHP", 20),
        _vis("SIMDSP", 16),
        _vis("SIMDInt", 12),
        _vis("SIMDLS", 8),
        _hid("FPDNaN", 4),
        _hid("FPFtZ", 0),
    ),
    "MVFR2_EL1": (
        _hid("FPMisc", 4),
        _hid("SIMDMisc", 0),
    ),
    "ID_PFR2_EL1": (
        _vis("SSBS", 4, strict=False),
        _hid("CSV3", 0, strict=False),
    ),
    "ID_DFR1_EL1": (
        _hid("MTPMU", 0, signed=True),
    ),
    "ID_MMFR5_EL1": (
        _hid("ETS", 0),
    ),
}

#: AArch32 ID registers; Linux initialises them only if 32-bit EL0 exists.
AARCH32_ID_REGS: frozenset[str] = frozenset(
    n for n, e in SYSREGS.items()
    if e.op0 == 3 and e.op1 == 0 and e.crn == 0 and 1 <= e.crm <= 3
)

#: name -> tracked register description (Linux ``arm64_ftr_regs[]``, ID part).
FTR_REGS: Mapping[str, FtrReg] = MappingProxyType({
    name: FtrReg(name, fields, aarch32=name in AARCH32_ID_REGS)
    for name, fields in _TABLES.items()
})

#: Field layouts of the CRm=0 identification registers.  These are not
#: sanitised by Linux; they exist so heterogeneous CPUs can be described with
#: :meth:`CpuIdRegs.with_overrides`.  MIDR_EL1's fields are all "visible"
#: (document table 4) but reflect the CPU the MRS ran on.
IDENT_FIELDS: Mapping[str, tuple[FtrField, ...]] = MappingProxyType({
    "MIDR_EL1": (
        _vis("Implementer", 24, width=8),
        _vis("Variant", 20),
        _vis("Architecture", 16),
        _vis("PartNum", 4, width=12),
        _vis("Revision", 0),
    ),
    "MPIDR_EL1": (
        _hid("Aff3", 32, width=8),
        _hid("U", 30, width=1),
        _hid("MT", 24, width=1),
        _hid("Aff2", 16, width=8),
        _hid("Aff1", 8, width=8),
        _hid("Aff0", 0, width=8),
    ),
    "REVIDR_EL1": (),
})


def _reg_name(reg: str | SysReg) -> str:
    """Canonical table name for ``reg`` (a name or a :class:`SysReg`)."""
    if isinstance(reg, SysReg):
        return reg.name
    return sysreg(reg).name


#: Alternative spellings used by the document (``ATOMICS``) vs. the kernel's
#: sysreg definitions (``ATOMIC``).  Matching is otherwise case-insensitive.
FIELD_ALIASES: Mapping[tuple[str, str], str] = MappingProxyType({
    ("ID_AA64ISAR0_EL1", "ATOMICS"): "ATOMIC",
})


def _canon_field(reg: str, field: str) -> str:
    return FIELD_ALIASES.get((reg, field.upper()), field)


def _fields_of(reg: str) -> tuple[FtrField, ...]:
    if reg in FTR_REGS:
        return FTR_REGS[reg].fields
    if reg in IDENT_FIELDS:
        return IDENT_FIELDS[reg]
    raise KeyError(f"{reg} has no field table")


# ---------------------------------------------------------------------------
# Field helpers
# ---------------------------------------------------------------------------

def field_value(reg: str | SysReg, field: str, value: int) -> int:
    """Extract field ``field`` of ``reg`` from ``value`` (sign-extended if signed)."""
    name = _reg_name(reg)
    field = _canon_field(name, field)
    for f in _fields_of(name):
        if f.name.upper() == field.upper():
            return f.extract(value)
    raise KeyError(f"{name} has no field {field!r}")


def set_field(reg: str | SysReg, field: str, value: int, field_val: int) -> int:
    """Return ``value`` with ``reg.field`` replaced by ``field_val``."""
    name = _reg_name(reg)
    field = _canon_field(name, field)
    for f in _fields_of(name):
        if f.name.upper() == field.upper():
            lo = -(1 << (f.width - 1)) if f.signed else 0
            hi = (1 << f.width) - 1
            if not lo <= field_val <= hi:
                raise ValueError(f"{name}.{f.name}: {field_val} does not fit {f.width} bits")
            return f.insert(value, field_val)
    raise KeyError(f"{name} has no field {field!r}")


def decode_fields(reg: str | SysReg, value: int) -> dict[str, int]:
    """``{field name: value}`` for every described field of ``reg``."""
    return {f.name: f.extract(value) for f in _fields_of(_reg_name(reg))}


# ---------------------------------------------------------------------------
# Sanitisation (read_sanitised_ftr_reg) and the EL0 view (emulate_mrs)
# ---------------------------------------------------------------------------

def safe_field_value(f: FtrField, new: int, cur: int) -> int:
    """Reconcile two differing (sign-extended) field values - ``arm64_ftr_safe_value()``."""
    if f.type is FtrType.EXACT:
        return FtrField.extract(f, f.safe_val << f.shift)
    if f.type is FtrType.LOWER_SAFE:
        return min(new, cur)
    if f.type is FtrType.HIGHER_OR_ZERO_SAFE:
        if new == 0 or cur == 0:
            return 0
        return max(new, cur)
    if f.type is FtrType.HIGHER_SAFE:
        return max(new, cur)
    raise AssertionError(f.type)  # pragma: no cover


def _sanitise_fields(fields: Sequence[FtrField], per_cpu_raw: Sequence[int]) -> int:
    if not per_cpu_raw:
        raise ValueError("need at least one CPU")
    boot = per_cpu_raw[0] & MASK64
    # init_cpu_ftr_reg(): keep only described fields of the boot CPU.
    val = 0
    for f in fields:
        val = f.insert(val, f.extract(boot))
    # update_cpu_ftr_reg() for every secondary, in CPU order.
    for new in per_cpu_raw[1:]:
        new &= MASK64
        for f in fields:
            cur_v = f.extract(val)
            new_v = f.extract(new)
            if cur_v != new_v:
                val = f.insert(val, safe_field_value(f, new_v, cur_v))
    return val


def sanitise(reg: str | SysReg, per_cpu_raw: Sequence[int]) -> int:
    """System-wide safe value of ``reg`` across all CPUs (``read_sanitised_ftr_reg``).

    ``per_cpu_raw[0]`` is the boot CPU.  Registers Linux does not track (but
    which exist in :data:`SYSREGS`) sanitise to 0, as in the kernel.  This
    function applies no AArch32 gating; :class:`SystemIdRegs` does.
    """
    name = _reg_name(reg)
    if not per_cpu_raw:
        raise ValueError("need at least one CPU")
    table = FTR_REGS.get(name)
    if table is None:
        return 0
    return _sanitise_fields(table.fields, per_cpu_raw)


def user_view(reg: str | SysReg, sanitised: int, *,
              disabled_configs: Iterable[str] = (),
              tables: Mapping[str, FtrReg] | None = None) -> int:
    """What an EL0 ``MRS`` of tracked register ``reg`` returns.

    ``arm64_ftr_reg_user_value()``: visible fields keep their sanitised value,
    hidden fields read their safe value, bits outside every field read 0.
    Untracked registers read 0.
    """
    name = _reg_name(reg)
    table = (FTR_REGS if tables is None else tables).get(name)
    if table is None:
        return 0
    disabled = frozenset(disabled_configs)
    return (table.user_val(disabled) | (sanitised & table.user_mask(disabled))) & MASK64


def is_emulated(reg: SysReg) -> bool:
    """Linux ``is_emulated()``: Op0=3, Op1=0, CRn=0, CRm in {0, 2..7}."""
    return (reg.op0 == 3 and reg.op1 == 0 and reg.crn == 0
            and (reg.crm == 0 or 2 <= reg.crm <= 7))


# ---------------------------------------------------------------------------
# CPU descriptions
# ---------------------------------------------------------------------------

_ID_BLOCK_NAMES: tuple[str, ...] = tuple(
    n for n, e in SYSREGS.items()
    if e.op0 == 3 and e.op1 == 0 and e.crn == 0 and e.crm >= 1
)
_IDENT_NAMES = ("MIDR_EL1", "MPIDR_EL1", "REVIDR_EL1")


@dataclass(frozen=True)
class CpuIdRegs:
    """Raw ID register values of one simulated CPU.

    ``regs`` maps register names (Op0=3, Op1=0, CRn=0, CRm=1..7) to their raw
    64-bit values; missing names read as 0.  MIDR/MPIDR/REVIDR are kept
    separately because Linux treats them specially.  Instances are immutable;
    the ``with_*`` methods return modified copies.
    """

    regs: Mapping[str, int]
    midr: int
    mpidr: int
    revidr: int = 0
    label: str = dc_field(default="", compare=False)

    def __post_init__(self) -> None:
        clean: dict[str, int] = {}
        for k, v in dict(self.regs).items():
            name = _reg_name(k)
            if name not in _ID_BLOCK_NAMES:
                raise KeyError(f"{k!r} is not an ID register in CRm=1..7")
            clean[name] = int(v) & MASK64
        object.__setattr__(self, "regs", MappingProxyType(clean))
        for attr in ("midr", "mpidr", "revidr"):
            object.__setattr__(self, attr, int(getattr(self, attr)) & MASK64)

    def __hash__(self) -> int:
        return hash((tuple(sorted(self.regs.items())), self.midr, self.mpidr, self.revidr))

    def raw(self, reg: str | SysReg) -> int:
        """Raw value of ``reg`` on this CPU (what EL1 would read)."""
        name = _reg_name(reg)
        if name == "MIDR_EL1":
            return self.midr
        if name == "MPIDR_EL1":
            return self.mpidr
        if name == "REVIDR_EL1":
            return self.revidr
        if name not in _ID_BLOCK_NAMES:
            raise KeyError(f"{name} is not an ID register")
        return self.regs.get(name, 0)

    def field(self, reg: str | SysReg, field: str) -> int:
        """Decoded field of this CPU's raw value."""
        return field_value(reg, field, self.raw(reg))

    def with_raw(self, reg: str | SysReg, value: int) -> "CpuIdRegs":
        """Copy with the whole raw value of ``reg`` replaced."""
        name = _reg_name(reg)
        if name == "MIDR_EL1":
            return replace(self, midr=value)
        if name == "MPIDR_EL1":
            return replace(self, mpidr=value)
        if name == "REVIDR_EL1":
            return replace(self, revidr=value)
        regs = dict(self.regs)
        regs[name] = value
        return replace(self, regs=regs)

    def with_overrides(self, reg: str | SysReg, field: str, value: int) -> "CpuIdRegs":
        """Copy with one field of ``reg`` set (e.g. ``("ID_AA64PFR0_EL1", "SVE", 0)``).

        Signed fields accept negative values (``("ID_AA64PFR0_EL1", "FP", -1)``).
        Works for MIDR/MPIDR fields too (see :data:`IDENT_FIELDS`).
        """
        return self.with_raw(reg, set_field(reg, field, self.raw(reg), value))

    @classmethod
    def from_unicorn(cls, cpu_model: int | None = None) -> "CpuIdRegs":
        """Every ID register of the machine's AArch64 CPU model (the hardware's values, read by
        :func:`emukern.machine.cpu_arm64.read_model_sysregs`), cached per model."""

        cpu_model = ARM64_MODEL_MAX if cpu_model is None else cpu_model
        with _UNICORN_LOCK:
            cached = _UNICORN_CACHE.get(cpu_model)
            if cached is not None:
                return cached
            names = _ID_BLOCK_NAMES + _IDENT_NAMES
            raw = read_model_sysregs([SYSREGS[n].tuple for n in names], cpu_model)
            got = dict(zip(names, raw))
            values = {n: got[n] for n in _ID_BLOCK_NAMES}
            ident = {n: got[n] for n in _IDENT_NAMES}
            result = cls(values, ident["MIDR_EL1"], ident["MPIDR_EL1"],
                         ident["REVIDR_EL1"], label=f"unicorn-model-{cpu_model}")
            _UNICORN_CACHE[cpu_model] = result
            return result

    @classmethod
    def from_unicorn_max(cls) -> "CpuIdRegs":
        """ID registers of Unicorn's ``UC_CPU_ARM64_MAX`` (QEMU "max") CPU."""
        return cls.from_unicorn(None)

    def supports_32bit_el0(self) -> bool:
        """ID_AA64PFR0_EL1.EL0 == 0b0010 (AArch32 and AArch64 at EL0)."""
        return self.field("ID_AA64PFR0_EL1", "EL0") == 0x2


_UNICORN_CACHE: dict[int, CpuIdRegs] = {}
_UNICORN_LOCK = threading.Lock()


# ---------------------------------------------------------------------------
# The system
# ---------------------------------------------------------------------------

class SystemIdRegs:
    """Sanitised ID registers of a set of CPUs plus the EL0 MRS emulation.

    CPU 0 is the boot CPU.  Sanitised and user-visible values are computed
    once at construction, as Linux does while bringing CPUs online.
    """

    def __init__(self, cpus: Sequence[CpuIdRegs], *,
                 disabled_configs: Iterable[str] = (),
                 tables: Mapping[str, FtrReg] | None = None) -> None:
        if not cpus:
            raise ValueError("a system needs at least one CPU")
        # the arm64_ftr_regs of the modelled release (ftr_regs_for); default: FTR_REGS (6.12)
        self.tables: Mapping[str, FtrReg] = FTR_REGS if tables is None else tables
        self.cpus: tuple[CpuIdRegs, ...] = tuple(cpus)
        self.disabled_configs: frozenset[str] = frozenset(disabled_configs)
        # AArch32 registers: initialised only if the boot CPU has 32-bit EL0,
        # then updated only from CPUs that have it (update_cpu_features()).
        self.aarch32_el0: bool = self.cpus[0].supports_32bit_el0()
        aarch32_cpus = [c for c in self.cpus if c.supports_32bit_el0()]
        sanitised: dict[str, int] = {}
        for name, table in self.tables.items():
            if table.aarch32:
                if not self.aarch32_el0:
                    sanitised[name] = 0
                    continue
                raws = [c.raw(name) for c in aarch32_cpus]
            else:
                raws = [c.raw(name) for c in self.cpus]
            sanitised[name] = _sanitise_fields(table.fields, raws)
        self._sanitised: Mapping[str, int] = MappingProxyType(sanitised)
        user: dict[str, int] = {}
        for name in self.tables:
            if self.tables[name].aarch32 and not self.aarch32_el0:
                user[name] = 0  # never initialised: user_val and sys_val are 0
            else:
                user[name] = user_view(name, sanitised[name],
                                       disabled_configs=self.disabled_configs, tables=self.tables)
        self._user: Mapping[str, int] = MappingProxyType(user)

    @classmethod
    def homogeneous(cls, n: int = 1, base: CpuIdRegs | None = None, *,
                    disabled_configs: Iterable[str] = ()) -> "SystemIdRegs":
        """``n`` copies of ``base`` (default: Unicorn max) with MPIDR.Aff0 = index."""
        cpu = CpuIdRegs.from_unicorn_max() if base is None else base
        cpus = [cpu.with_overrides("MPIDR_EL1", "Aff0", i) for i in range(n)]
        return cls(cpus, disabled_configs=disabled_configs)

    def __len__(self) -> int:
        return len(self.cpus)

    def sanitised(self, reg: str | SysReg) -> int:
        """``read_sanitised_ftr_reg()``: 0 for untracked registers."""
        return self._sanitised.get(_reg_name(reg), 0)

    def user_value(self, reg: str | SysReg) -> int:
        """``arm64_ftr_reg_user_value()`` of a tracked register (0 if untracked)."""
        return self._user.get(_reg_name(reg), 0)

    def sanitised_field(self, reg: str | SysReg, field: str) -> int:
        return field_value(reg, field, self.sanitised(reg))

    def user_field(self, reg: str | SysReg, field: str) -> int:
        return field_value(reg, field, self.user_value(reg))

    def _cpu(self, cpu_index: int) -> CpuIdRegs:
        if not 0 <= cpu_index < len(self.cpus):
            raise IndexError(f"cpu_index {cpu_index} out of range (0..{len(self.cpus) - 1})")
        return self.cpus[cpu_index]

    def emulate_mrs(self, reg: SysReg, cpu_index: int) -> int | None:
        """Value an EL0 ``MRS`` of ``reg`` on CPU ``cpu_index`` yields, or ``None``.

        ``None`` means Linux would not emulate it and delivers SIGILL
        (``emulate_sys_reg()`` returning -EINVAL).
        """
        cpu = self._cpu(cpu_index)
        if not is_emulated(reg):
            return None
        if reg.crm == 0:
            # emulate_id_reg()
            if reg == SYSREGS["MIDR_EL1"]:
                return cpu.midr  # read_cpuid_id() on the CPU doing the MRS
            if reg == SYSREGS["MPIDR_EL1"]:
                return SYS_MPIDR_SAFE_VAL
            if reg == SYSREGS["REVIDR_EL1"]:
                return 0  # IMPLEMENTATION DEFINED -> 0
            return None
        name = reg.name
        if name in self.tables:
            return self._user[name]
        # Untracked: IMPLEMENTATION DEFINED (ID_AA64AFR0_EL1...) or reserved RAZ.
        return 0


def try_emulate_mrs_value(word: int, cpu_index: int,
                          system: SystemIdRegs) -> tuple[int, int] | None:
    """Decode ``word`` as MRS and emulate it: ``(rt, value)`` or ``None``.

    Models ``try_emulate_mrs()`` (undef-instruction path).  ``rt == 31`` is
    XZR: the caller must discard the value but still skip the instruction.
    """
    decoded = decode_mrs(word)
    if decoded is None:
        return None
    reg, rt = decoded
    value = system.emulate_mrs(reg, cpu_index)
    if value is None:
        return None
    return rt, value


def try_emulate_mrs_esr(iss: int, cpu_index: int,
                        system: SystemIdRegs) -> tuple[int, int] | None:
    """Same as :func:`try_emulate_mrs_value` but from an EC=0x18 ESR ISS.

    Models ``do_el0_sys()`` -> ``mrs_handler()``; writes (MSR) are never
    emulated.
    """
    reg, rt, is_read = decode_esr_sys64_iss(iss)
    if not is_read:
        return None
    value = system.emulate_mrs(reg, cpu_index)
    if value is None:
        return None
    return rt, value


# ---------------------------------------------------------------------------
# Machine configuration: per-CPU overrides (MachineConfig.cpu_id_overrides)
# ---------------------------------------------------------------------------
#
# A heterogeneous machine is described as ``{cpu_index: {key: value}}`` where
# ``key`` is ``"REG.FIELD"`` (set one field, e.g. ``"ID_AA64ISAR0_EL1.AES"``,
# signed fields accept negative values) or ``"REG"`` (the whole raw value,
# e.g. ``"MIDR_EL1"``).  Every CPU starts as Unicorn's ``max`` CPU with
# MPIDR_EL1.Aff0 = its index.  The command line spells one entry
# ``CPU:REG[.FIELD]=VALUE`` (``--cpu-id 1:ID_AA64ISAR0_EL1.AES=0``).

def apply_id_override(cpu: CpuIdRegs, key: str, value: int) -> CpuIdRegs:
    """``cpu`` with one ``"REG.FIELD"`` or ``"REG"`` override applied (KeyError/ValueError if bad)."""
    reg, _, fld = key.strip().partition(".")
    name = _reg_name(reg)           # KeyError for unknown registers
    if fld:
        return cpu.with_overrides(name, fld, int(value))
    return cpu.with_raw(name, int(value))


def build_cpu_id_regs(n: int, overrides: Mapping[int, Mapping[str, int]] | None = None,
                      base: CpuIdRegs | None = None) -> list[CpuIdRegs]:
    """Per-CPU ID registers for an ``n``-CPU machine with ``overrides`` applied.

    Raises ``ValueError`` naming the offending entry for an out-of-range CPU,
    an unknown register or field, or a value that does not fit.
    """
    cpu0 = CpuIdRegs.from_unicorn_max() if base is None else base
    cpus = [cpu0.with_overrides("MPIDR_EL1", "Aff0", i) for i in range(n)]
    for idx, entries in (overrides or {}).items():
        if not isinstance(idx, int) or not 0 <= idx < n:
            raise ValueError(f"CPU {idx!r} in cpu_id_overrides does not exist (the machine has CPUs 0..{n - 1})")
        for key, value in entries.items():
            try:
                cpus[idx] = apply_id_override(cpus[idx], key, value)
            except (KeyError, ValueError) as exc:
                msg = exc.args[0] if exc.args else str(exc)
                raise ValueError(f"CPU {idx}: {key}={value}: {msg}") from None
    return cpus


def parse_cpu_id_override(text: str) -> tuple[int, str, int]:
    """Parse ``CPU:REG[.FIELD]=VALUE`` (value in any base ``int(x, 0)`` takes) -> (cpu, key, value)."""
    cpu_s, sep, rest = text.partition(":")
    key, sep2, val_s = rest.partition("=")
    if not sep or not sep2 or not key.strip():
        raise ValueError(f"expected CPU:REG[.FIELD]=VALUE, got {text!r}")
    try:
        cpu = int(cpu_s.strip(), 0)
        value = int(val_s.strip(), 0)
    except ValueError:
        raise ValueError(f"expected CPU:REG[.FIELD]=VALUE with integer CPU and VALUE, got {text!r}") from None
    reg = key.strip().partition(".")[0]
    _reg_name(reg)                  # KeyError early for an unknown register
    return cpu, key.strip(), value


# ---------------------------------------------------------------------------
# Per-release tables (kernel/versions.py ``ftr_tables``)
# ---------------------------------------------------------------------------
#
# The tables above are those of 6.6 .. 6.12 (Debian 13's 6.12.117 under qemu-system with
# QEMU's "max" CPU returns exactly these fields: tests/oracle).  Linux 6.1 differs in what it
# exposes to EL0:
#
# * the AArch32 ID_ISAR6_EL1 fields (I8MM, BF16, SB, FHM, DP), MVFR1_EL1.FPHP/SIMDHP and
#   ID_PFR2_EL1.SSBS were still FTR_HIDDEN: an EL0 MRS reads their safe value 0 (measured:
#   Debian 12's 6.1.176 reads ID_ISAR6 0 and MVFR1 0x10011100 where 6.12 reads 0x01101110 and
#   0x13211100 on the same CPU); later kernels made them visible with the compat HWCAPs;
# * fields added with features that came after 6.1 are not described at all (RES0, read 0):
#   ID_AA64ISAR2_EL1 CSSC/RPRFM/BC/MOPS, ID_AA64ZFR0_EL1.B16B16, and the SME2 fields of
#   ID_AA64SMFR0_EL1 (I16I32, B16B16, F16F16, BI32I32).
#
# The newest release modelled (7.3-rc1) uses the 6.12 tables: the registers later kernels track
# in addition (ID_AA64ISAR3_EL1, ID_AA64PFR2_EL1, ID_AA64MMFR3_EL1, ID_AA64FPFR0_EL1) describe
# features QEMU 7.2's "max" CPU does not have, so they read 0 either way; they are not modelled.

_HIDDEN_IN_6_1: dict[str, frozenset[str]] = {
    "ID_ISAR6_EL1": frozenset({"I8MM", "BF16", "SB", "FHM", "DP"}),
    "MVFR1_EL1": frozenset({"FPHP", "SIMDHP"}),
    "ID_PFR2_EL1": frozenset({"SSBS"}),
}
_ABSENT_IN_6_1: dict[str, frozenset[str]] = {
    "ID_AA64ISAR2_EL1": frozenset({"CSSC", "RPRFM", "BC", "MOPS"}),
    "ID_AA64ZFR0_EL1": frozenset({"B16B16"}),
    "ID_AA64SMFR0_EL1": frozenset({"I16I32", "B16B16", "F16F16", "BI32I32"}),
}


def _tables_6_1() -> Mapping[str, FtrReg]:
    out: dict[str, FtrReg] = {}
    for name, reg in FTR_REGS.items():
        hidden = _HIDDEN_IN_6_1.get(name, frozenset())
        absent = _ABSENT_IN_6_1.get(name, frozenset())
        fields = tuple(replace(f, visible=False, config=None) if f.name in hidden else f
                       for f in reg.fields if f.name not in absent)
        out[name] = FtrReg(name, fields, aarch32=reg.aarch32)
    return MappingProxyType(out)


_VERSION_TABLES: dict[str, Mapping[str, FtrReg]] = {}


def ftr_regs_for(version: str) -> Mapping[str, FtrReg]:
    """The ID-register tables (``arm64_ftr_regs``) of release ``version``: "6.1", "6.12", "7.3"."""
    if version in ("6.12", "7.3"):
        return FTR_REGS
    if version == "6.1":
        t = _VERSION_TABLES.get(version)
        if t is None:
            t = _VERSION_TABLES[version] = _tables_6_1()
        return t
    raise KeyError(f"no ID-register tables for Linux {version!r} (known: 6.1, 6.12, 7.3)")


def cpu_model_id_regs(model: str = "qemu-max") -> CpuIdRegs:
    """Raw ID registers of the modelled CPU: Unicorn's ``max`` as read from Unicorn, with the
    fields QEMU 7.2's ``max`` sets on top for ``qemu-max`` (emukern.machine.arm64_idregs), so the
    EL0 view matches what the real kernels report under ``qemu-system-aarch64 -cpu max``."""
    if model not in CPU_MODELS:
        raise ValueError(f"unknown arm64 CPU model {model!r} (known: {', '.join(CPU_MODELS)})")
    cpu = CpuIdRegs.from_unicorn_max()
    if model == "qemu-max":
        for reg, fld, value in QEMU_MAX_FIELDS:
            cpu = cpu.with_overrides(reg, fld, value)
        cpu = replace(cpu, label="qemu-7.2-max")
    return cpu
