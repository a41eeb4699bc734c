"""AArch64 system-register encodings and MRS/MSR instruction helpers.

This module models the small part of Linux's ``arch/arm64/include/asm/sysreg.h``
that emukern needs to emulate EL0 accesses to system registers:

* A system register is named by the five-tuple ``(op0, op1, CRn, CRm, op2)``.
  Linux packs that tuple into a ``u32`` "sys_id" with the same layout the
  fields have inside the MRS/MSR instruction (``sys_reg()`` in sysreg.h:
  op0 at bit 19, op1 at 16, CRn at 12, CRm at 8, op2 at 5).  :attr:`SysReg.sys_id`
  reproduces that packing so values can be compared with kernel sources.
* ``MRS Xt, <reg>`` is encoded as ``1101 0101 0011 xxxx ...``: bits [31:21]
  are ``0b11010101001`` (L=1, i.e. read), bit 20 is the high bit of op0 (always
  1 for op0 in {2, 3}), and the low 20 bits carry op0<0>, op1, CRn, CRm, op2 and
  Rt.  Linux's ``aarch64_insn_is_mrs()`` therefore tests
  ``(insn & 0xfff00000) == 0xd5300000``; ``MSR <reg>, Xt`` (L=0) is the same
  with ``0xd5100000``.
* When EL0 executes a trapped MRS, the kernel sees an ESR with EC=0x18 whose ISS
  carries the same fields in a different order (``esr_sys64_to_sysreg()`` in
  Linux).  :func:`decode_esr_sys64_iss` models that path.

Nothing here executes instructions; it is pure bit manipulation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

__all__ = [
    "SysReg",
    "SYSREGS",
    "sysreg",
    "lookup_encoding",
    "MRS_MASK",
    "MRS_VALUE",
    "MSR_MASK",
    "MSR_VALUE",
    "is_mrs",
    "is_msr",
    "decode_mrs",
    "decode_msr",
    "encode_mrs",
    "encode_msr",
    "decode_esr_sys64_iss",
    "encode_esr_sys64_iss",
    "XZR",
]

#: Register number 31 in the Rt slot of MRS/MSR means XZR: a write to it is
#: discarded (Linux's ``pt_regs_write_reg()`` ignores r == 31).
XZR = 31

# Linux: aarch64_insn_is_mrs() / aarch64_insn_is_msr_reg() masks.
MRS_MASK = 0xFFF0_0000
MRS_VALUE = 0xD530_0000
MSR_MASK = 0xFFF0_0000
MSR_VALUE = 0xD510_0000

# Shifts of the sys_reg() packing (identical to the instruction layout).
_OP0_SHIFT = 19
_OP1_SHIFT = 16
_CRN_SHIFT = 12
_CRM_SHIFT = 8
_OP2_SHIFT = 5


@dataclass(frozen=True, order=True)
class SysReg:
    """An AArch64 system register encoding ``(op0, op1, CRn, CRm, op2)``.

    Instances are hashable and compare by encoding, so they can be used as
    dictionary keys.  :attr:`name` returns the architectural name when the
    encoding is in :data:`SYSREGS`, otherwise the generic assembler spelling
    ``S<op0>_<op1>_C<n>_C<m>_<op2>`` (accepted by GNU as, LLVM and keystone).
    """

    op0: int
    op1: int
    crn: int
    crm: int
    op2: int

    def __post_init__(self) -> None:
        limits = (("op0", self.op0, 3), ("op1", self.op1, 7), ("crn", self.crn, 15),
                  ("crm", self.crm, 15), ("op2", self.op2, 7))
        for label, value, hi in limits:
            if not isinstance(value, int) or not 0 <= value <= hi:
                raise ValueError(f"SysReg.{label}={value!r} out of range 0..{hi}")

    # -- naming -----------------------------------------------------------
    @property
    def name(self) -> str:
        """Architectural name if known, else the generic ``S3_0_C0_C4_2`` form."""
        known = _BY_ENCODING.get(self)
        return known if known is not None else self.generic_name

    @property
    def generic_name(self) -> str:
        """The ``S<op0>_<op1>_C<crn>_C<crm>_<op2>`` spelling of this encoding."""
        return f"S{self.op0}_{self.op1}_C{self.crn}_C{self.crm}_{self.op2}"

    @property
    def is_named(self) -> bool:
        """True if this encoding has an entry in :data:`SYSREGS`."""
        return self in _BY_ENCODING

    # -- packed forms -----------------------------------------------------
    @property
    def sys_id(self) -> int:
        """Linux's ``sys_reg(op0, op1, crn, crm, op2)`` packing (a u32)."""
        return ((self.op0 << _OP0_SHIFT) | (self.op1 << _OP1_SHIFT)
                | (self.crn << _CRN_SHIFT) | (self.crm << _CRM_SHIFT)
                | (self.op2 << _OP2_SHIFT))

    @classmethod
    def from_sys_id(cls, sys_id: int) -> "SysReg":
        """Inverse of :attr:`sys_id` (Linux ``sys_reg_Op0()`` ... ``sys_reg_Op2()``)."""
        return cls((sys_id >> _OP0_SHIFT) & 3, (sys_id >> _OP1_SHIFT) & 7,
                   (sys_id >> _CRN_SHIFT) & 15, (sys_id >> _CRM_SHIFT) & 15,
                   (sys_id >> _OP2_SHIFT) & 7)

    @classmethod
    def by_name(cls, name: str) -> "SysReg":
        """Look up a register by (case-insensitive) name or generic ``S..`` form."""
        return sysreg(name)

    @property
    def tuple(self) -> tuple[int, int, int, int, int]:
        """``(op0, op1, crn, crm, op2)`` in the order ``Uc.cpr_read`` takes."""
        return (self.op0, self.op1, self.crn, self.crm, self.op2)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return (f"SysReg({self.op0}, {self.op1}, {self.crn}, {self.crm}, "
                f"{self.op2}) <{self.name}>")


def _r(op0: int, op1: int, crn: int, crm: int, op2: int) -> SysReg:
    return SysReg(op0, op1, crn, crm, op2)


#: Names -> encodings.  The ID register block is Op0=3, Op1=0, CRn=0 (ARM ARM
#: table "System instruction encodings for non-Debug System register accesses").
SYSREGS: Mapping[str, SysReg] = {
    # CRm = 0: identification registers Linux handles specially (emulate_id_reg)
    "MIDR_EL1": _r(3, 0, 0, 0, 0),
    "MPIDR_EL1": _r(3, 0, 0, 0, 5),
    "REVIDR_EL1": _r(3, 0, 0, 0, 6),
    # CRm = 1..3: AArch32 ID registers (as seen from AArch64)
    "ID_PFR0_EL1": _r(3, 0, 0, 1, 0),
    "ID_PFR1_EL1": _r(3, 0, 0, 1, 1),
    "ID_DFR0_EL1": _r(3, 0, 0, 1, 2),
    "ID_AFR0_EL1": _r(3, 0, 0, 1, 3),
    "ID_MMFR0_EL1": _r(3, 0, 0, 1, 4),
    "ID_MMFR1_EL1": _r(3, 0, 0, 1, 5),
    "ID_MMFR2_EL1": _r(3, 0, 0, 1, 6),
    "ID_MMFR3_EL1": _r(3, 0, 0, 1, 7),
    "ID_ISAR0_EL1": _r(3, 0, 0, 2, 0),
    "ID_ISAR1_EL1": _r(3, 0, 0, 2, 1),
    "ID_ISAR2_EL1": _r(3, 0, 0, 2, 2),
    "ID_ISAR3_EL1": _r(3, 0, 0, 2, 3),
    "ID_ISAR4_EL1": _r(3, 0, 0, 2, 4),
    "ID_ISAR5_EL1": _r(3, 0, 0, 2, 5),
    "ID_MMFR4_EL1": _r(3, 0, 0, 2, 6),
    "ID_ISAR6_EL1": _r(3, 0, 0, 2, 7),
    "MVFR0_EL1": _r(3, 0, 0, 3, 0),
    "MVFR1_EL1": _r(3, 0, 0, 3, 1),
    "MVFR2_EL1": _r(3, 0, 0, 3, 2),
    "ID_PFR2_EL1": _r(3, 0, 0, 3, 4),
    "ID_DFR1_EL1": _r(3, 0, 0, 3, 5),
    "ID_MMFR5_EL1": _r(3, 0, 0, 3, 6),
    # CRm = 4: processor features
    "ID_AA64PFR0_EL1": _r(3, 0, 0, 4, 0),
    "ID_AA64PFR1_EL1": _r(3, 0, 0, 4, 1),
    "ID_AA64PFR2_EL1": _r(3, 0, 0, 4, 2),
    "ID_AA64ZFR0_EL1": _r(3, 0, 0, 4, 4),
    "ID_AA64SMFR0_EL1": _r(3, 0, 0, 4, 5),
    # CRm = 5: debug / auxiliary
    "ID_AA64DFR0_EL1": _r(3, 0, 0, 5, 0),
    "ID_AA64DFR1_EL1": _r(3, 0, 0, 5, 1),
    "ID_AA64AFR0_EL1": _r(3, 0, 0, 5, 4),
    "ID_AA64AFR1_EL1": _r(3, 0, 0, 5, 5),
    # CRm = 6: instruction set attributes
    "ID_AA64ISAR0_EL1": _r(3, 0, 0, 6, 0),
    "ID_AA64ISAR1_EL1": _r(3, 0, 0, 6, 1),
    "ID_AA64ISAR2_EL1": _r(3, 0, 0, 6, 2),
    # CRm = 7: memory model
    "ID_AA64MMFR0_EL1": _r(3, 0, 0, 7, 0),
    "ID_AA64MMFR1_EL1": _r(3, 0, 0, 7, 1),
    "ID_AA64MMFR2_EL1": _r(3, 0, 0, 7, 2),
    "ID_AA64MMFR3_EL1": _r(3, 0, 0, 7, 3),
    # Other registers emukern touches
    "SCTLR_EL1": _r(3, 0, 1, 0, 0),
    "CPACR_EL1": _r(3, 0, 1, 0, 2),
    "ZCR_EL1": _r(3, 0, 1, 2, 0),
    "SMCR_EL1": _r(3, 0, 1, 2, 6),
    "SPSR_EL1": _r(3, 0, 4, 0, 0),
    "ELR_EL1": _r(3, 0, 4, 0, 1),
    "SP_EL0": _r(3, 0, 4, 1, 0),
    "CurrentEL": _r(3, 0, 4, 2, 2),
    "ESR_EL1": _r(3, 0, 5, 2, 0),
    "FAR_EL1": _r(3, 0, 6, 0, 0),
    "VBAR_EL1": _r(3, 0, 12, 0, 0),
    "TPIDR_EL1": _r(3, 0, 13, 0, 4),
    "CNTKCTL_EL1": _r(3, 0, 14, 1, 0),
    "GMID_EL1": _r(3, 1, 0, 0, 4),
    "SMIDR_EL1": _r(3, 1, 0, 0, 6),
    "CTR_EL0": _r(3, 3, 0, 0, 1),
    "DCZID_EL0": _r(3, 3, 0, 0, 7),
    "NZCV": _r(3, 3, 4, 2, 0),
    "DAIF": _r(3, 3, 4, 2, 1),
    "FPCR": _r(3, 3, 4, 4, 0),
    "FPSR": _r(3, 3, 4, 4, 1),
    "TPIDR_EL0": _r(3, 3, 13, 0, 2),
    "TPIDRRO_EL0": _r(3, 3, 13, 0, 3),
    "CNTFRQ_EL0": _r(3, 3, 14, 0, 0),
    "CNTPCT_EL0": _r(3, 3, 14, 0, 1),
    "CNTVCT_EL0": _r(3, 3, 14, 0, 2),
    "ZCR_EL2": _r(3, 4, 1, 2, 0),
    "CPTR_EL3": _r(3, 6, 1, 1, 2),
    "ZCR_EL3": _r(3, 6, 1, 2, 0),
}

_BY_ENCODING: dict[SysReg, str] = {}
for _name, _enc in SYSREGS.items():
    if _enc in _BY_ENCODING:  # pragma: no cover - table sanity
        raise AssertionError(f"duplicate encoding {_enc!r} for {_name}")
    _BY_ENCODING[_enc] = _name
_BY_UPPER: dict[str, SysReg] = {n.upper(): e for n, e in SYSREGS.items()}


def lookup_encoding(reg: SysReg) -> str | None:
    """Name of ``reg`` in :data:`SYSREGS`, or ``None`` if unnamed."""
    return _BY_ENCODING.get(reg)


def sysreg(name: str) -> SysReg:
    """Resolve a register name (case-insensitive) or ``S3_0_C0_C4_2`` spelling.

    Raises :class:`KeyError` for unknown names.
    """
    key = name.strip().upper()
    found = _BY_UPPER.get(key)
    if found is not None:
        return found
    if key.startswith("S"):
        parts = key[1:].split("_")
        if (len(parts) == 5 and parts[2].startswith("C") and parts[3].startswith("C")):
            try:
                return SysReg(int(parts[0]), int(parts[1]), int(parts[2][1:]),
                              int(parts[3][1:]), int(parts[4]))
            except ValueError:
                pass
    raise KeyError(f"unknown system register {name!r}")


# ---------------------------------------------------------------------------
# Instruction encodings
# ---------------------------------------------------------------------------

def _fields_from_word(word: int) -> tuple[SysReg, int]:
    # Bits [20:19] are op0 (bit 20 is fixed to 1 by the MRS/MSR masks).
    reg = SysReg((word >> 19) & 3, (word >> 16) & 7, (word >> 12) & 15,
                 (word >> 8) & 15, (word >> 5) & 7)
    return reg, word & 31


def is_mrs(word: int) -> bool:
    """True if ``word`` is ``MRS Xt, <sysreg>`` (Linux ``aarch64_insn_is_mrs``)."""
    return (word & MRS_MASK) == MRS_VALUE


def is_msr(word: int) -> bool:
    """True if ``word`` is ``MSR <sysreg>, Xt`` (register form, L=0, op0>=2)."""
    return (word & MSR_MASK) == MSR_VALUE


def decode_mrs(word: int) -> tuple[SysReg, int] | None:
    """Decode an MRS instruction word into ``(sysreg, rt)``; ``None`` otherwise.

    Mirrors ``try_emulate_mrs()`` in Linux, which takes the 16-bit immediate at
    bits [20:5] as the sys_reg encoding and bits [4:0] as Rt.
    """
    if not is_mrs(word):
        return None
    return _fields_from_word(word)


def decode_msr(word: int) -> tuple[SysReg, int] | None:
    """Decode a register-form MSR instruction into ``(sysreg, rt)``."""
    if not is_msr(word):
        return None
    return _fields_from_word(word)


def _encode(base: int, reg: SysReg, rt: int) -> int:
    if reg.op0 < 2:
        raise ValueError(f"op0={reg.op0}: MRS/MSR (register) need op0 in {{2, 3}}")
    if not 0 <= rt <= 31:
        raise ValueError(f"rt={rt} out of range 0..31")
    return (base | ((reg.op0 & 1) << 19) | (reg.op1 << 16) | (reg.crn << 12)
            | (reg.crm << 8) | (reg.op2 << 5) | rt)


def encode_mrs(reg: SysReg, rt: int) -> int:
    """Encode ``MRS X<rt>, <reg>`` (``rt`` == 31 is XZR)."""
    return _encode(MRS_VALUE, reg, rt)


def encode_msr(reg: SysReg, rt: int) -> int:
    """Encode ``MSR <reg>, X<rt>``."""
    return _encode(MSR_VALUE, reg, rt)


# ---------------------------------------------------------------------------
# ESR_ELx ISS for EC=0x18 (trapped MSR/MRS/system instruction)
# ---------------------------------------------------------------------------
# ISS layout (ARM ARM D17, Linux ESR_ELx_SYS64_ISS_*):
#   Op0 [21:20]  Op2 [19:17]  Op1 [16:14]  CRn [13:10]  Rt [9:5]  CRm [4:1]
#   Direction [0] (1 = read, i.e. MRS)

def decode_esr_sys64_iss(iss: int) -> tuple[SysReg, int, bool]:
    """Decode an EC=0x18 ISS into ``(sysreg, rt, is_read)``.

    This is the path Linux's ``do_el0_sys()`` -> ``mrs_handler()`` takes:
    ``esr_sys64_to_sysreg()`` re-packs the ISS fields and
    ``ESR_ELx_SYS64_ISS_RT()`` extracts Rt.
    """
    reg = SysReg((iss >> 20) & 3, (iss >> 14) & 7, (iss >> 10) & 15,
                 (iss >> 1) & 15, (iss >> 17) & 7)
    return reg, (iss >> 5) & 31, bool(iss & 1)


def encode_esr_sys64_iss(reg: SysReg, rt: int, is_read: bool) -> int:
    """Inverse of :func:`decode_esr_sys64_iss` (for tests and trap injection)."""
    if not 0 <= rt <= 31:
        raise ValueError(f"rt={rt} out of range 0..31")
    return ((reg.op0 << 20) | (reg.op2 << 17) | (reg.op1 << 14) | (reg.crn << 10)
            | (rt << 5) | (reg.crm << 1) | int(bool(is_read)))
