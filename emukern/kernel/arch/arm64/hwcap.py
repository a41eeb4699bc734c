"""arm64 ELF HWCAPs from the sanitised ID registers (arch/arm64/kernel/cpufeature.c).

Linux derives AT_HWCAP/AT_HWCAP2 at boot in ``setup_elf_hwcaps(arm64_elf_hwcaps)``: each entry of
that table names an ID register field, a minimum value and a hwcap bit, and the bit is set when
the *system-wide sanitised* field reaches the minimum (``has_cpuid_feature``).  So the hwcaps say
exactly what the emulated EL0 ``MRS`` of the same registers says, on every CPU, and a
heterogeneous machine (``--cpu-id``) loses a hwcap as soon as one CPU lacks the feature (the
LOWER_SAFE fold of the sanitiser).  ``HWCAP_CPUID`` is set unconditionally: the kernel emulates
EL0 ID-register reads (cpu-feature-registers.rst), which is why glibc reads MIDR_EL1 at start-up
only when it sees that bit.

Not modelled: HWCAP_EVTSTRM (no architected-timer event stream in emukern), and hwcaps added
after the v6.8 tables this file follows (LRCPC3, LSE128, FPMR, ...).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from emukern.kernel.arch.arm64.cpufeature import SystemIdRegs

# hwcap names as /proc/cpuinfo prints them (hwcap_str[]), index = bit; AT_HWCAP then AT_HWCAP2
HWCAP_NAMES = ("fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt "
               "fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs "
               "sb paca pacg").split()
HWCAP2_NAMES = ("dcpodp sve2 sveaes svepmull svebitperm svesha3 svesm4 flagm2 frint svei8mm svef32mm "
                "svef64mm svebf16 i8mm bf16 dgh rng bti mte ecv afp rpres mte3 sme smei16i64 smef64f64 "
                "smei8i32 smef16f32 smeb16f32 smef32f32 smefa64 wfxt ebf16 sveebf16 cssc rprfm sve2p1 "
                "sme2 sme2p1 smei16i32 smebi32i32 smeb16b16 smef16f16 mops hbc").split()


@dataclass(frozen=True)
class HwcapCap:
    """One arm64_elf_hwcaps[] entry: ``reg.field >= min`` (signed fields compare signed)."""

    reg: str
    field: str
    min: int
    name: str                 # the hwcap's /proc/cpuinfo name ("aes", "sve2", ...)
    exact: bool = False       # the SME entries that demand one encoding (e.g. I16I64 == 0xF)


def _c(reg: str, field: str, minimum: int, name: str, exact: bool = False) -> HwcapCap:
    return HwcapCap("ID_AA64" + reg + "_EL1", field, minimum, name, exact)


ARM64_ELF_HWCAPS: tuple[HwcapCap, ...] = (
    _c("ISAR0", "AES", 2, "pmull"), _c("ISAR0", "AES", 1, "aes"),
    _c("ISAR0", "SHA1", 1, "sha1"), _c("ISAR0", "SHA2", 1, "sha2"), _c("ISAR0", "SHA2", 2, "sha512"),
    _c("ISAR0", "CRC32", 1, "crc32"), _c("ISAR0", "ATOMIC", 2, "atomics"),
    _c("ISAR0", "RDM", 1, "asimdrdm"), _c("ISAR0", "SHA3", 1, "sha3"), _c("ISAR0", "SM3", 1, "sm3"),
    _c("ISAR0", "SM4", 1, "sm4"), _c("ISAR0", "DP", 1, "asimddp"), _c("ISAR0", "FHM", 1, "asimdfhm"),
    _c("ISAR0", "TS", 1, "flagm"), _c("ISAR0", "TS", 2, "flagm2"), _c("ISAR0", "RNDR", 1, "rng"),
    _c("PFR0", "FP", 0, "fp"), _c("PFR0", "FP", 1, "fphp"),
    _c("PFR0", "AdvSIMD", 0, "asimd"), _c("PFR0", "AdvSIMD", 1, "asimdhp"),
    _c("PFR0", "DIT", 1, "dit"),
    _c("ISAR1", "DPB", 1, "dcpop"), _c("ISAR1", "DPB", 2, "dcpodp"),
    _c("ISAR1", "JSCVT", 1, "jscvt"), _c("ISAR1", "FCMA", 1, "fcma"),
    _c("ISAR1", "LRCPC", 1, "lrcpc"), _c("ISAR1", "LRCPC", 2, "ilrcpc"),
    _c("ISAR1", "FRINTTS", 1, "frint"), _c("ISAR1", "SB", 1, "sb"),
    _c("ISAR1", "BF16", 1, "bf16"), _c("ISAR1", "BF16", 2, "ebf16"),
    _c("ISAR1", "DGH", 1, "dgh"), _c("ISAR1", "I8MM", 1, "i8mm"),
    _c("MMFR2", "AT", 1, "uscat"),
    _c("PFR0", "SVE", 1, "sve"),
    _c("ZFR0", "SVEver", 1, "sve2"), _c("ZFR0", "SVEver", 2, "sve2p1"),
    _c("ZFR0", "AES", 1, "sveaes"), _c("ZFR0", "AES", 2, "svepmull"),
    _c("ZFR0", "BitPerm", 1, "svebitperm"), _c("ZFR0", "BF16", 1, "svebf16"),
    _c("ZFR0", "BF16", 2, "sveebf16"), _c("ZFR0", "SHA3", 1, "svesha3"),
    _c("ZFR0", "SM4", 1, "svesm4"), _c("ZFR0", "I8MM", 1, "svei8mm"),
    _c("ZFR0", "F32MM", 1, "svef32mm"), _c("ZFR0", "F64MM", 1, "svef64mm"),
    _c("PFR1", "SSBS", 2, "ssbs"), _c("PFR1", "BT", 1, "bti"),
    _c("PFR1", "MTE", 2, "mte"), _c("PFR1", "MTE", 3, "mte3"),
    _c("MMFR0", "ECV", 1, "ecv"), _c("MMFR1", "AFP", 1, "afp"),
    _c("ISAR2", "RPRES", 1, "rpres"), _c("ISAR2", "WFxT", 2, "wfxt"),
    _c("ISAR2", "MOPS", 1, "mops"), _c("ISAR2", "BC", 1, "hbc"),
    _c("ISAR2", "CSSC", 1, "cssc"), _c("ISAR2", "RPRFM", 1, "rprfm"),
    _c("PFR1", "SME", 1, "sme"),
    _c("SMFR0", "FA64", 1, "smefa64", True), _c("SMFR0", "SMEver", 1, "sme2"),
    _c("SMFR0", "SMEver", 2, "sme2p1"), _c("SMFR0", "I16I64", 0xF, "smei16i64", True),
    _c("SMFR0", "F64F64", 1, "smef64f64", True), _c("SMFR0", "I16I32", 0x5, "smei16i32", True),
    _c("SMFR0", "B16B16", 1, "smeb16b16", True), _c("SMFR0", "F16F16", 1, "smef16f16", True),
    _c("SMFR0", "I8I32", 0xF, "smei8i32", True), _c("SMFR0", "F16F32", 1, "smef16f32", True),
    _c("SMFR0", "B16F32", 1, "smeb16f32", True), _c("SMFR0", "BI32I32", 1, "smebi32i32", True),
    _c("SMFR0", "F32F32", 1, "smef32f32", True),
)

_PAC_ADDR = (("ID_AA64ISAR1_EL1", "APA"), ("ID_AA64ISAR1_EL1", "API"), ("ID_AA64ISAR2_EL1", "APA3"))
_PAC_GEN = (("ID_AA64ISAR1_EL1", "GPA"), ("ID_AA64ISAR1_EL1", "GPI"), ("ID_AA64ISAR2_EL1", "GPA3"))


def _bit(name: str) -> tuple[int, int]:
    """(0 for AT_HWCAP or 1 for AT_HWCAP2, bit)."""
    if name in HWCAP_NAMES:
        return 0, HWCAP_NAMES.index(name)
    return 1, HWCAP2_NAMES.index(name)


def cap_matches(ids: "SystemIdRegs", cap: HwcapCap) -> bool:
    """has_cpuid_feature on the sanitised value (cpufeature.c: feature_matches)."""
    try:
        v = ids.sanitised_field(cap.reg, cap.field)
    except KeyError:
        return False
    return v == cap.min if cap.exact else v >= cap.min


def setup_elf_hwcaps(ids: "SystemIdRegs", *, sve: bool = True) -> tuple[int, int]:
    """(AT_HWCAP, AT_HWCAP2) of a machine whose sanitised ID registers are ``ids``.

    ``sve=False`` models a machine whose SVE is switched off (the --no-sve option): the SVE and
    SVE2 hwcaps go, as ``system_supports_sve()`` would be false."""
    words = [1 << HWCAP_NAMES.index("cpuid"), 0]       # HWCAP_CPUID: always (EL0 MRS emulated)
    sme = False
    for cap in ARM64_ELF_HWCAPS:
        if not sve and cap.reg in ("ID_AA64ZFR0_EL1",) or (not sve and cap.name == "sve"):
            continue
        if cap.reg == "ID_AA64SMFR0_EL1" and not sme:
            continue                     # SME sub-features only count with SME itself
        if cap_matches(ids, cap):
            w, b = _bit(cap.name)
            words[w] |= 1 << b
            if cap.name == "sme":
                sme = True
    # HWCAP_MULTI_CAP(ptr_auth_hwcap_addr_matches / _gen_matches): any of the algorithms
    if any(ids.sanitised_field(r, f) >= 1 for r, f in _PAC_ADDR):
        words[0] |= 1 << HWCAP_NAMES.index("paca")
    if any(ids.sanitised_field(r, f) >= 1 for r, f in _PAC_GEN):
        words[0] |= 1 << HWCAP_NAMES.index("pacg")
    return words[0], words[1]


def hwcap_names(hwcap: int, hwcap2: int) -> list[str]:
    """The Features line of /proc/cpuinfo: every set bit's name, AT_HWCAP first (c_show)."""
    return ([n for i, n in enumerate(HWCAP_NAMES) if hwcap >> i & 1]
            + [n for i, n in enumerate(HWCAP2_NAMES) if hwcap2 >> i & 1])


def arm64_cpuinfo(k, hwcap: int, hwcap2: int) -> str:
    """/proc/cpuinfo as arch/arm64/kernel/cpuinfo.c c_show prints it: per CPU its number,
    BogoMIPS (from the architected timer: lpj = rate / HZ, printed as lpj / (500000 / HZ)), the
    Features line (the system-wide hwcaps) and the MIDR_EL1 fields of *that* CPU."""
    ids = k.id_regs
    rate = k.config.timer_freq
    bogo = rate / 500000
    feats = " ".join(hwcap_names(hwcap, hwcap2))
    out = []
    for i, cpu in enumerate(ids.cpus):
        midr = cpu.midr
        out.append(f"processor\t: {i}\nBogoMIPS\t: {bogo:.2f}\nFeatures\t: {feats}\n"
                   f"CPU implementer\t: 0x{midr >> 24 & 0xFF:02x}\nCPU architecture: 8\n"
                   f"CPU variant\t: 0x{midr >> 20 & 0xF:x}\nCPU part\t: 0x{midr >> 4 & 0xFFF:03x}\n"
                   f"CPU revision\t: {midr & 0xF}\n\n")
    return "".join(out)
