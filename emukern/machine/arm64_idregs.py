"""ID-register values of QEMU's AArch64 ``max`` CPU where Unicorn's ``UC_CPU_ARM64_MAX`` differs.

Unicorn 2 is built from an older QEMU than the qemu-system-aarch64 (7.2, Debian 12) that boots
the real kernels emukern is compared with (``emukern compare``; ``-cpu max,sve256=on``).  Its
``max`` CPU leaves out feature fields that QEMU 7.2's ``aarch64_max_initfn()`` sets, so the
sanitised values an EL0 MRS reads differ from the real kernel's on the "same" CPU.  This table
lists the EL0-visible fields QEMU 7.2 sets and Unicorn does not (the fields Linux hides from EL0
read their safe value whatever the CPU has, so they are left alone).

Caveat: the values describe QEMU's CPU, and Unicorn 2.1.4 executes none of SVE2: the machine's
SVE2 unit (machine/sve2/) executes the SVE2-family words it implements when these registers
advertise them (see its package docstring for the list); the matrix-multiply/BF16 ones need
machine/sve2/matmul.py.  ``MachineConfig.arm64_cpu_model = "unicorn-max"`` keeps Unicorn's own
values.  Neither model has FEAT_LSE2 (ID_AA64MMFR2_EL1.AT = 0): the machine makes misaligned LSE
atomics take the alignment fault that requires (machine/a64_atomics.py).
"""
from __future__ import annotations

#: (register, field, value) as QEMU 7.2's aarch64_max_initfn() sets them (MTE is reported 0:
#: the virt board gives no tag memory unless -M virt,mte=on, and QEMU then downgrades it).
QEMU_MAX_FIELDS: tuple[tuple[str, str, int], ...] = (
    ("ID_AA64PFR0_EL1", "DIT", 1),          # FEAT_DIT
    ("ID_AA64PFR1_EL1", "BT", 1),           # FEAT_BTI (Unicorn already has it: set for completeness)
    ("ID_AA64PFR1_EL1", "SSBS", 2),         # FEAT_SSBS2
    ("ID_AA64ISAR1_EL1", "BF16", 1),        # FEAT_BF16
    ("ID_AA64ISAR1_EL1", "DGH", 1),         # FEAT_DGH
    ("ID_AA64ISAR1_EL1", "I8MM", 1),        # FEAT_I8MM
    ("ID_AA64ZFR0_EL1", "SVEver", 1),       # FEAT_SVE2
    ("ID_AA64ZFR0_EL1", "AES", 2),          # FEAT_SVE_PMULL128
    ("ID_AA64ZFR0_EL1", "BitPerm", 1),      # FEAT_SVE_BitPerm
    ("ID_AA64ZFR0_EL1", "BF16", 1),         # FEAT_BF16 (SVE)
    ("ID_AA64ZFR0_EL1", "SHA3", 1),         # FEAT_SVE_SHA3
    ("ID_AA64ZFR0_EL1", "SM4", 1),          # FEAT_SVE_SM4
    ("ID_AA64ZFR0_EL1", "I8MM", 1),         # FEAT_I8MM (SVE)
    ("ID_AA64ZFR0_EL1", "F32MM", 1),        # FEAT_F32MM
    ("ID_AA64ZFR0_EL1", "F64MM", 1),        # FEAT_F64MM
    # the AArch32 view QEMU replicates from the AArch64 one
    ("ID_ISAR6_EL1", "I8MM", 1),
    ("ID_ISAR6_EL1", "BF16", 1),
    ("MVFR1_EL1", "FPHP", 3),               # FP16 arithmetic + conversions
    ("MVFR1_EL1", "SIMDHP", 2),
    ("ID_PFR2_EL1", "SSBS", 1),
)

CPU_MODELS = ("qemu-max", "unicorn-max")
