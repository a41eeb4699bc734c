"""Which SVE2-family features the CPU has: read from the ID registers the machine was built with.

The unit executes an instruction only when the CPU model's ID registers advertise its feature
(ID_AA64PFR0_EL1.SVE and the ID_AA64ZFR0_EL1 field below), so ``--cpu-model unicorn-max`` --
which advertises only what Unicorn itself runs -- keeps every SVE2 word UNDEF, as hardware
without the feature does.  Field positions and values are the Arm ARM's (D19.2 ID_AA64ZFR0_EL1).
"""
from __future__ import annotations

from typing import Mapping

#: feature -> (register, bit offset of its 4-bit field, lowest value that means "present")
FEATURE_FIELDS: Mapping[str, tuple[str, int, int]] = {
    "sve2": ("ID_AA64ZFR0_EL1", 0, 1),          # SVEver >= 1: FEAT_SVE2
    "sveaes": ("ID_AA64ZFR0_EL1", 4, 1),        # AES >= 1: FEAT_SVE_AES
    "svepmull128": ("ID_AA64ZFR0_EL1", 4, 2),   # AES >= 2: FEAT_SVE_PMULL128
    "svebitperm": ("ID_AA64ZFR0_EL1", 16, 1),   # BitPerm: FEAT_SVE_BitPerm
    "svebf16": ("ID_AA64ZFR0_EL1", 20, 1),      # BF16: FEAT_BF16 (SVE)
    "svesha3": ("ID_AA64ZFR0_EL1", 32, 1),      # SHA3: FEAT_SVE_SHA3
    "svesm4": ("ID_AA64ZFR0_EL1", 40, 1),       # SM4: FEAT_SVE_SM4
    "svei8mm": ("ID_AA64ZFR0_EL1", 44, 1),      # I8MM: FEAT_I8MM (SVE)
    "svef32mm": ("ID_AA64ZFR0_EL1", 52, 1),     # F32MM
    "svef64mm": ("ID_AA64ZFR0_EL1", 56, 1),     # F64MM
}
PFR0_SVE_SHIFT = 32

# the registers by (op0, op1, crn, crm, op2)
ID_AA64PFR0_EL1 = (3, 0, 0, 4, 0)
ID_AA64ZFR0_EL1 = (3, 0, 0, 4, 4)


def features_from_idregs(pfr0: int, zfr0: int) -> frozenset[str]:
    """The SVE2-family features an ID_AA64PFR0_EL1 / ID_AA64ZFR0_EL1 pair advertises (none
    without PFR0.SVE: ZFR0 only means something on a CPU with SVE)."""
    if (pfr0 >> PFR0_SVE_SHIFT) & 0xF == 0:
        return frozenset()
    regs = {"ID_AA64ZFR0_EL1": zfr0}
    return frozenset(name for name, (reg, shift, lo) in FEATURE_FIELDS.items()
                     if (regs[reg] >> shift) & 0xF >= lo)


def model_idregs(cpu_model: str, unicorn_pfr0: int, unicorn_zfr0: int) -> tuple[int, int]:
    """(ID_AA64PFR0_EL1, ID_AA64ZFR0_EL1) of a CPU model: Unicorn's own values (``unicorn-max``)
    or those with QEMU 7.2's ``max`` fields on top (``qemu-max``, machine/arm64_idregs.py)."""
    from emukern.machine.arm64_idregs import CPU_MODELS, QEMU_MAX_FIELDS
    if cpu_model not in CPU_MODELS:
        raise ValueError(f"unknown arm64 CPU model {cpu_model!r} (known: {', '.join(CPU_MODELS)})")
    regs = {"ID_AA64PFR0_EL1": unicorn_pfr0, "ID_AA64ZFR0_EL1": unicorn_zfr0}
    if cpu_model == "qemu-max":
        shifts = {("ID_AA64PFR0_EL1", "SVE"): 32, ("ID_AA64ZFR0_EL1", "SVEver"): 0,
                  ("ID_AA64ZFR0_EL1", "AES"): 4, ("ID_AA64ZFR0_EL1", "BitPerm"): 16,
                  ("ID_AA64ZFR0_EL1", "BF16"): 20, ("ID_AA64ZFR0_EL1", "SHA3"): 32,
                  ("ID_AA64ZFR0_EL1", "SM4"): 40, ("ID_AA64ZFR0_EL1", "I8MM"): 44,
                  ("ID_AA64ZFR0_EL1", "F32MM"): 52, ("ID_AA64ZFR0_EL1", "F64MM"): 56}
        for reg, fld, value in QEMU_MAX_FIELDS:
            sh = shifts.get((reg, fld))
            if sh is not None:
                regs[reg] = (regs[reg] & ~(0xF << sh)) | (value << sh)
    return regs["ID_AA64PFR0_EL1"], regs["ID_AA64ZFR0_EL1"]
