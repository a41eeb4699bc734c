"""Tests for the arm64 ID-register sanitisation / MRS emulation model.

Reference behaviour: Linux ``arch/arm64/kernel/cpufeature.c`` (arm64_ftr_bits
tables, update_cpu_ftr_reg(), emulate_sys_reg()) and
``Documentation/arch/arm64/cpu-feature-registers.rst``.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings, strategies as st

from emukern.kernel.arch.arm64 import cpufeature as cf
from emukern.kernel.arch.arm64 import sysreg as sr
from emukern.kernel.arch.arm64.cpufeature import (
    FTR_REGS,
    IDENT_FIELDS,
    SYS_MPIDR_SAFE_VAL,
    CpuIdRegs,
    FtrType,
    SystemIdRegs,
    decode_fields,
    field_value,
    is_emulated,
    sanitise,
    try_emulate_mrs_esr,
    try_emulate_mrs_value,
    user_view,
)
from emukern.kernel.arch.arm64.sysreg import (
    SYSREGS,
    SysReg,
    decode_esr_sys64_iss,
    decode_mrs,
    decode_msr,
    encode_esr_sys64_iss,
    encode_mrs,
    encode_msr,
    is_mrs,
    is_msr,
    sysreg,
)

keystone = pytest.importorskip("keystone")

# ---------------------------------------------------------------------------
# Fixtures / helpers
# ---------------------------------------------------------------------------

MAX = CpuIdRegs.from_unicorn_max()
ID_NAMES = [n for n, e in SYSREGS.items() if (e.op0, e.op1, e.crn) == (3, 0, 0)]

_KS = keystone.Ks(keystone.KS_ARCH_ARM64, keystone.KS_MODE_LITTLE_ENDIAN)


def ks_word(asm: str) -> int:
    enc, _ = _KS.asm(asm)
    assert enc is not None and len(enc) == 4, asm
    return int.from_bytes(bytes(enc), "little")


def ks_word_or_none(asm: str) -> int | None:
    try:
        return ks_word(asm)
    except keystone.KsError:
        return None


def system(*cpus: CpuIdRegs, **kw) -> SystemIdRegs:
    return SystemIdRegs(list(cpus), **kw)


# ---------------------------------------------------------------------------
# sysreg.py
# ---------------------------------------------------------------------------

class TestSysReg:
    @pytest.mark.parametrize("name", sorted(SYSREGS))
    def test_name_roundtrip(self, name: str) -> None:
        reg = SYSREGS[name]
        assert reg.name == name
        assert sysreg(name) is reg or sysreg(name) == reg
        assert sysreg(name.lower()) == reg
        assert sysreg(reg.generic_name) == reg
        assert SysReg.from_sys_id(reg.sys_id) == reg
        assert SysReg.by_name(name) == reg

    def test_requested_encodings(self) -> None:
        expect = {
            "CNTVCT_EL0": (3, 3, 14, 0, 2), "CNTFRQ_EL0": (3, 3, 14, 0, 0),
            "CurrentEL": (3, 0, 4, 2, 2), "ZCR_EL1": (3, 0, 1, 2, 0),
            "CPACR_EL1": (3, 0, 1, 0, 2), "SPSR_EL1": (3, 0, 4, 0, 0),
            "ELR_EL1": (3, 0, 4, 0, 1), "ESR_EL1": (3, 0, 5, 2, 0),
            "CNTKCTL_EL1": (3, 0, 14, 1, 0), "CPTR_EL3": (3, 6, 1, 1, 2),
            "ZCR_EL2": (3, 4, 1, 2, 0), "ZCR_EL3": (3, 6, 1, 2, 0),
            "TPIDR_EL0": (3, 3, 13, 0, 2), "MIDR_EL1": (3, 0, 0, 0, 0),
            "MPIDR_EL1": (3, 0, 0, 0, 5), "REVIDR_EL1": (3, 0, 0, 0, 6),
            "ID_AA64ISAR0_EL1": (3, 0, 0, 6, 0), "ID_AA64PFR0_EL1": (3, 0, 0, 4, 0),
            "ID_AA64ZFR0_EL1": (3, 0, 0, 4, 4), "ID_AA64SMFR0_EL1": (3, 0, 0, 4, 5),
            "ID_AA64MMFR3_EL1": (3, 0, 0, 7, 3), "ID_AA64AFR1_EL1": (3, 0, 0, 5, 5),
        }
        for name, enc in expect.items():
            assert SYSREGS[name].tuple == enc, name

    def test_linux_sys_id_packing(self) -> None:
        # SYS_ID_AA64ISAR0_EL1 = sys_reg(3, 0, 0, 6, 0) = 0x180600 in Linux.
        assert SYSREGS["ID_AA64ISAR0_EL1"].sys_id == 0x180600
        assert SYSREGS["MIDR_EL1"].sys_id == 0x180000

    def test_unknown_name(self) -> None:
        with pytest.raises(KeyError):
            sysreg("NOT_A_REG_EL1")
        assert SysReg(3, 0, 0, 4, 3).name == "S3_0_C0_C4_3"
        assert not SysReg(3, 0, 0, 4, 3).is_named

    @pytest.mark.parametrize("bad", [(4, 0, 0, 0, 0), (3, 8, 0, 0, 0), (3, 0, 16, 0, 0),
                                     (3, 0, 0, 16, 0), (3, 0, 0, 0, 8), (-1, 0, 0, 0, 0)])
    def test_range_checks(self, bad: tuple[int, ...]) -> None:
        with pytest.raises(ValueError):
            SysReg(*bad)

    @pytest.mark.parametrize("name", sorted(SYSREGS))
    @pytest.mark.parametrize("rt", [0, 3, 17, 30, 31])
    def test_mrs_encode_matches_keystone(self, name: str, rt: int) -> None:
        reg = SYSREGS[name]
        xreg = "xzr" if rt == 31 else f"x{rt}"
        word = encode_mrs(reg, rt)
        # The generic S<op0>_<op1>_C<n>_C<m>_<op2> spelling always assembles.
        assert word == ks_word(f"mrs {xreg}, {reg.generic_name}")
        # The architectural name too, when keystone's (older LLVM) knows it.
        by_name = ks_word_or_none(f"mrs {xreg}, {name}")
        if by_name is not None:
            assert word == by_name
        assert is_mrs(word) and not is_msr(word)
        assert decode_mrs(word) == (reg, rt)
        assert decode_msr(word) is None

    @pytest.mark.parametrize("name", ["ID_AA64ISAR0_EL1", "ID_AA64PFR0_EL1", "MIDR_EL1",
                                      "ID_AA64MMFR0_EL1", "ID_AA64DFR0_EL1", "ID_AA64PFR1_EL1",
                                      "MPIDR_EL1", "REVIDR_EL1", "ID_AA64ISAR1_EL1",
                                      "ID_AA64AFR0_EL1", "CurrentEL", "CNTVCT_EL0"])
    def test_named_in_keystone(self, name: str) -> None:
        # Regression: these must be known to keystone so the name test is real.
        assert encode_mrs(SYSREGS[name], 3) == ks_word(f"mrs x3, {name}")

    @pytest.mark.parametrize("name", ["TPIDR_EL0", "SPSR_EL1", "ELR_EL1", "CPACR_EL1",
                                      "ZCR_EL1", "CPTR_EL3", "CNTKCTL_EL1"])
    @pytest.mark.parametrize("rt", [1, 5, 31])
    def test_msr_encode_matches_keystone(self, name: str, rt: int) -> None:
        reg = SYSREGS[name]
        xreg = "xzr" if rt == 31 else f"x{rt}"
        word = encode_msr(reg, rt)
        assert word == ks_word(f"msr {reg.generic_name}, {xreg}")
        assert is_msr(word) and not is_mrs(word)
        assert decode_msr(word) == (reg, rt)
        assert decode_mrs(word) is None

    @pytest.mark.parametrize("asm", ["nop", "ret", "svc #0", "add x0, x1, x2",
                                     "msr daifset, #2", "dsb sy", "sys #0, c7, c5, #0, x1",
                                     "sysl x1, #0, c7, c5, #0"])
    def test_non_mrs_words(self, asm: str) -> None:
        assert decode_mrs(ks_word(asm)) is None

    def test_encode_rejects(self) -> None:
        with pytest.raises(ValueError):
            encode_mrs(SysReg(1, 0, 7, 5, 0), 0)  # op0=1 is SYS, not MRS
        with pytest.raises(ValueError):
            encode_mrs(SYSREGS["MIDR_EL1"], 32)

    @given(st.integers(0, (1 << 20) - 1))
    def test_any_mrs_word_roundtrips(self, low20: int) -> None:
        word = sr.MRS_VALUE | low20
        reg, rt = decode_mrs(word)  # type: ignore[misc]
        assert reg.op0 in (2, 3)
        assert encode_mrs(reg, rt) == word

    @given(st.sampled_from(sorted(SYSREGS)), st.integers(0, 31), st.booleans())
    def test_esr_iss_roundtrip(self, name: str, rt: int, is_read: bool) -> None:
        reg = SYSREGS[name]
        iss = encode_esr_sys64_iss(reg, rt, is_read)
        assert iss < (1 << 25)
        assert decode_esr_sys64_iss(iss) == (reg, rt, is_read)

    def test_esr_iss_layout(self) -> None:
        # MRS x5, ID_AA64ISAR0_EL1: Op0=3 [21:20], CRm=6 [4:1], Rt=5 [9:5], dir=1.
        iss = encode_esr_sys64_iss(SYSREGS["ID_AA64ISAR0_EL1"], 5, True)
        assert iss == (3 << 20) | (5 << 5) | (6 << 1) | 1


# ---------------------------------------------------------------------------
# Field tables
# ---------------------------------------------------------------------------

# Fields documented as narrower/wider than a nibble.
_NON_NIBBLE = {
    ("ID_AA64SMFR0_EL1", n) for n in
    ("FA64", "F64F64", "B16B16", "F16F16", "F16F32", "B16F32", "BI32I32", "F32F32")
} | {("MIDR_EL1", "Implementer"), ("MIDR_EL1", "PartNum")} | {
    ("MPIDR_EL1", n) for n in ("Aff3", "U", "MT", "Aff2", "Aff1", "Aff0")
}

_ALL_TABLES = {**dict(FTR_REGS.items()), **{k: None for k in IDENT_FIELDS}}


def _fields(name: str):
    return FTR_REGS[name].fields if name in FTR_REGS else IDENT_FIELDS[name]


class TestTables:
    @pytest.mark.parametrize("name", sorted(_ALL_TABLES))
    def test_descending_and_non_overlapping(self, name: str) -> None:
        fields = _fields(name)
        seen = 0
        for prev, cur in zip(fields, fields[1:]):
            # Linux sort_ftr_regs(): descending shifts, no overlap.
            assert cur.shift + cur.width <= prev.shift, (name, prev.name, cur.name)
        for f in fields:
            assert f.mask & seen == 0
            seen |= f.mask
            assert f.shift + f.width <= 64

    @pytest.mark.parametrize("name", sorted(_ALL_TABLES))
    def test_widths_and_names(self, name: str) -> None:
        fields = _fields(name)
        names = [f.name for f in fields]
        assert len(set(names)) == len(names)
        for f in fields:
            if (name, f.name) in _NON_NIBBLE:
                assert f.width != 4
            else:
                assert f.width == 4, (name, f.name)
                assert f.shift % 4 == 0

    @pytest.mark.parametrize("name", sorted(FTR_REGS))
    def test_registered_in_id_space(self, name: str) -> None:
        e = SYSREGS[name]
        assert (e.op0, e.op1, e.crn) == (3, 0, 0) and 1 <= e.crm <= 7
        assert FTR_REGS[name].aarch32 == (e.crm <= 3)

    @pytest.mark.parametrize("name", sorted(FTR_REGS))
    def test_safe_values_fit_and_signed_types(self, name: str) -> None:
        for f in FTR_REGS[name].fields:
            assert 0 <= f.safe_val < (1 << f.width)
            # Every signed field in Linux' tables is LOWER_SAFE or EXACT.
            if f.signed:
                assert f.type in (FtrType.LOWER_SAFE, FtrType.EXACT)

    # The document's visible-field tables (section 4): name -> (msb, lsb).
    DOC_VISIBLE: dict[str, dict[str, tuple[int, int]]] = {
        "ID_AA64ISAR0_EL1": {
            "RNDR": (63, 60), "TS": (55, 52), "FHM": (51, 48), "DP": (47, 44),
            "SM4": (43, 40), "SM3": (39, 36), "SHA3": (35, 32), "RDM": (31, 28),
            "ATOMIC": (23, 20), "CRC32": (19, 16), "SHA2": (15, 12), "SHA1": (11, 8),
            "AES": (7, 4)},
        "ID_AA64PFR0_EL1": {"DIT": (51, 48), "SVE": (35, 32), "AdvSIMD": (23, 20),
                            "FP": (19, 16)},
        "ID_AA64PFR1_EL1": {"SME": (27, 24), "MTE": (11, 8), "SSBS": (7, 4), "BT": (3, 0)},
        "ID_AA64ISAR1_EL1": {
            "I8MM": (55, 52), "DGH": (51, 48), "BF16": (47, 44), "SB": (39, 36),
            "FRINTTS": (35, 32), "GPI": (31, 28), "GPA": (27, 24), "LRCPC": (23, 20),
            "FCMA": (19, 16), "JSCVT": (15, 12), "API": (11, 8), "APA": (7, 4),
            "DPB": (3, 0)},
        "ID_AA64MMFR0_EL1": {"ECV": (63, 60)},
        "ID_AA64MMFR1_EL1": {"AFP": (47, 44)},
        "ID_AA64MMFR2_EL1": {"AT": (35, 32)},
        "ID_AA64ZFR0_EL1": {
            "F64MM": (59, 56), "F32MM": (55, 52), "I8MM": (47, 44), "SM4": (43, 40),
            "SHA3": (35, 32), "B16B16": (27, 24), "BF16": (23, 20), "BitPerm": (19, 16),
            "AES": (7, 4), "SVEver": (3, 0)},
        "ID_AA64ISAR2_EL1": {
            "CSSC": (55, 52), "RPRFM": (51, 48), "BC": (23, 20), "MOPS": (19, 16),
            "APA3": (15, 12), "GPA3": (11, 8), "RPRES": (7, 4), "WFxT": (3, 0)},
        "MVFR0_EL1": {"FPDP": (11, 8)},
        "MVFR1_EL1": {"SIMDFMAC": (31, 28), "SIMDSP": (19, 16), "SIMDInt": (15, 12),
                      "SIMDLS": (11, 8)},
        "ID_ISAR5_EL1": {"CRC32": (19, 16), "SHA2": (15, 12), "SHA1": (11, 8), "AES": (7, 4)},
    }
    # Documented as present but not visible.
    DOC_HIDDEN = {"ID_AA64PFR0_EL1": ["MPAM", "GIC", "EL3", "EL2", "EL1", "EL0"]}
    # cpufeature.c exposes these too though the document's table omits them.
    CODE_EXTRA_VISIBLE = {"MVFR1_EL1": {"FPHP", "SIMDHP"}}

    @pytest.mark.parametrize("name", sorted(DOC_VISIBLE))
    def test_visible_fields_match_document(self, name: str) -> None:
        table = FTR_REGS[name]
        visible = {f.name: (f.msb, f.shift) for f in table.fields if f.visible}
        expected = dict(self.DOC_VISIBLE[name])
        for extra in self.CODE_EXTRA_VISIBLE.get(name, ()):
            expected[extra] = visible[extra]
        assert visible == expected

    @pytest.mark.parametrize("name,field", [(r, f) for r, fs in DOC_HIDDEN.items() for f in fs])
    def test_documented_hidden(self, name: str, field: str) -> None:
        assert not FTR_REGS[name].field(field).visible

    def test_document_spelling_alias(self) -> None:
        # The document says ATOMICS, the kernel's sysreg file ATOMIC.
        assert FTR_REGS["ID_AA64ISAR0_EL1"].field("ATOMICS").shift == 20
        assert field_value("ID_AA64ISAR0_EL1", "atomics", 0x200000) == 2
        assert field_value("ID_AA64ZFR0_EL1", "SVEVer", 0x1) == 1

    def test_user_mask_isar0(self) -> None:
        # Everything but TLB [59:56] and the reserved nibbles [27:24], [3:0].
        assert FTR_REGS["ID_AA64ISAR0_EL1"].user_mask() == 0xF0FF_FFFF_F0FF_FFF0


# ---------------------------------------------------------------------------
# Unicorn max CPU: raw values and hand-worked sanitised / EL0 values
# ---------------------------------------------------------------------------

# Raw values Unicorn 2.1.4 reports for UC_CPU_ARM64_MAX via cpr_read().
MAX_RAW = {
    "ID_AA64ISAR0_EL1": 0x1021111110212120,
    "ID_AA64ISAR1_EL1": 0x0000011101211012,
    "ID_AA64ISAR2_EL1": 0,
    "ID_AA64PFR0_EL1": 0x0000000100112222,
    "ID_AA64PFR1_EL1": 0x1,
    "ID_AA64ZFR0_EL1": 0,
    "ID_AA64SMFR0_EL1": 0,
    "ID_AA64DFR0_EL1": 0x10305506,
    "ID_AA64MMFR0_EL1": 0x1124,
    "ID_AA64MMFR1_EL1": 0x211120,
    "ID_AA64MMFR2_EL1": 0x11,
    "ID_ISAR5_EL1": 0x11011121,
    "MVFR0_EL1": 0x10110222,
    "MVFR1_EL1": 0x12111111,
}

# What EL0 reads for the homogeneous max system (hand-worked; see comments).
MAX_EL0 = {
    "MIDR_EL1": 0x000F0510,            # QEMU "max": implementer 0, arch 0xf, part 0x051
    "MPIDR_EL1": 0x80000000,           # SYS_MPIDR_SAFE_VAL
    "REVIDR_EL1": 0,
    "ID_AA64ISAR0_EL1": 0x1021111110212120,   # all present fields visible, TLB=0 anyway
    "ID_AA64ISAR1_EL1": 0x0000001101211012,   # SPECRES [43:40] hidden -> 0
    "ID_AA64ISAR2_EL1": 0,
    "ID_AA64PFR0_EL1": 0x0000000100110011,    # SVE/AdvSIMD/FP kept; EL3,EL2 -> 0; EL1,EL0 -> 1
    "ID_AA64PFR1_EL1": 0x1,                   # BT
    "ID_AA64PFR2_EL1": 0,                     # untracked
    "ID_AA64ZFR0_EL1": 0,
    "ID_AA64SMFR0_EL1": 0,
    "ID_AA64DFR0_EL1": 0x6,                   # DebugVer hidden, safe 0x6
    "ID_AA64DFR1_EL1": 0,
    "ID_AA64AFR0_EL1": 0,
    "ID_AA64AFR1_EL1": 0,
    "ID_AA64MMFR0_EL1": 0x00000111FF000000,   # TGRAN*_2 -> 1, TGRAN4/64 -> 0xf
    "ID_AA64MMFR1_EL1": 0,                    # only AFP visible, and it is 0
    "ID_AA64MMFR2_EL1": 0,                    # only AT visible, and it is 0
    "ID_AA64MMFR3_EL1": 0,                    # untracked in the modelled kernel
    "ID_ISAR0_EL1": 0, "ID_ISAR1_EL1": 0, "ID_ISAR2_EL1": 0, "ID_ISAR3_EL1": 0,
    "ID_ISAR4_EL1": 0,
    "ID_ISAR5_EL1": 0x00011120,               # CRC32, SHA2, SHA1, AES
    "ID_MMFR4_EL1": 0,
    "ID_ISAR6_EL1": 0x1110,                   # SB, FHM, DP (JSCVT, SPECRES hidden)
    "MVFR0_EL1": 0x200,                       # FPDP
    "MVFR1_EL1": 0x12111100,                  # SIMDFMAC..SIMDLS
    "MVFR2_EL1": 0, "ID_PFR2_EL1": 0, "ID_DFR1_EL1": 0, "ID_MMFR5_EL1": 0,
}


class TestUnicornMax:
    def test_cached(self) -> None:
        assert CpuIdRegs.from_unicorn_max() is MAX

    @pytest.mark.parametrize("name,value", sorted(MAX_RAW.items()))
    def test_raw(self, name: str, value: int) -> None:
        assert MAX.raw(name) == value

    def test_ident(self) -> None:
        assert (MAX.midr, MAX.mpidr, MAX.revidr) == (0x000F0510, 0x80000000, 0)
        assert MAX.supports_32bit_el0()

    @pytest.mark.parametrize("name", ["ID_AA64ISAR0_EL1", "ID_AA64PFR0_EL1", "MIDR_EL1",
                                      "ID_AA64MMFR0_EL1", "ID_AA64DFR0_EL1"])
    def test_cpr_read_agrees_with_executed_mrs(self, name: str) -> None:
        # Unicorn runs at EL1, so an executed MRS sees the raw value.
        from unicorn import Uc, UC_ARCH_ARM64, UC_MODE_ARM
        from unicorn.arm64_const import UC_ARM64_REG_X7, UC_CPU_ARM64_MAX

        uc = Uc(UC_ARCH_ARM64, UC_MODE_ARM)
        uc.ctl_set_cpu_model(UC_CPU_ARM64_MAX)
        uc.mem_map(0x10000, 0x1000)
        uc.mem_write(0x10000, encode_mrs(SYSREGS[name], 7).to_bytes(4, "little"))
        uc.emu_start(0x10000, 0x10004)
        assert uc.reg_read(UC_ARM64_REG_X7) == MAX.raw(name)

    # ID_AA64ISAR0_EL1 = 0x1021111110212120, nibble by nibble.
    ISAR0_FIELDS = {
        "RNDR": 1, "TLB": 0, "TS": 2, "FHM": 1, "DP": 1, "SM4": 1, "SM3": 1,
        "SHA3": 1, "RDM": 1, "ATOMIC": 2, "CRC32": 1, "SHA2": 2, "SHA1": 1, "AES": 2,
    }

    @pytest.mark.parametrize("field,value", sorted(ISAR0_FIELDS.items()))
    def test_isar0_fields(self, field: str, value: int) -> None:
        s = SystemIdRegs.homogeneous(4)
        assert s.sanitised_field("ID_AA64ISAR0_EL1", field) == value
        assert s.user_field("ID_AA64ISAR0_EL1", field) == value

    def test_isar0_whole(self) -> None:
        s = SystemIdRegs.homogeneous(4)
        assert s.sanitised("ID_AA64ISAR0_EL1") == 0x1021111110212120
        assert decode_fields("ID_AA64ISAR0_EL1", s.sanitised("ID_AA64ISAR0_EL1")) == \
            self.ISAR0_FIELDS

    # ID_AA64PFR0_EL1 = 0x0000000100112222: (sanitised, EL0-visible) per field.
    PFR0_FIELDS = {
        "CSV3": (0, 0), "CSV2": (0, 0), "DIT": (0, 0), "AMU": (0, 0), "MPAM": (0, 0),
        "SEL2": (0, 0), "SVE": (1, 1), "RAS": (0, 0), "GIC": (0, 0),
        "AdvSIMD": (1, 1), "FP": (1, 1),
        "EL3": (2, 0), "EL2": (2, 0),       # hidden, safe 0
        "EL1": (2, 1), "EL0": (2, 1),       # hidden, safe ELx_64BIT_ONLY
    }

    @pytest.mark.parametrize("field,expect", sorted(PFR0_FIELDS.items()))
    def test_pfr0_fields(self, field: str, expect: tuple[int, int]) -> None:
        s = SystemIdRegs.homogeneous(2)
        assert (s.sanitised_field("ID_AA64PFR0_EL1", field),
                s.user_field("ID_AA64PFR0_EL1", field)) == expect

    def test_pfr0_whole(self) -> None:
        s = SystemIdRegs.homogeneous(2)
        assert s.sanitised("ID_AA64PFR0_EL1") == 0x0000000100112222
        assert s.user_value("ID_AA64PFR0_EL1") == 0x0000000100110011

    @pytest.mark.parametrize("name,value", sorted(MAX_EL0.items()))
    @pytest.mark.parametrize("cpu", [0, 2])
    def test_el0_view(self, name: str, value: int, cpu: int) -> None:
        s = SystemIdRegs.homogeneous(3)
        assert s.emulate_mrs(SYSREGS[name], cpu) == value

    def test_el0_view_covers_whole_space(self) -> None:
        named = {n for n, e in SYSREGS.items() if is_emulated(e)}
        assert named == set(MAX_EL0)


# ---------------------------------------------------------------------------
# Heterogeneous systems
# ---------------------------------------------------------------------------

class TestHeterogeneous:
    @pytest.mark.parametrize("odd_cpu", [0, 1, 3])
    def test_one_cpu_without_aes(self, odd_cpu: int) -> None:
        cpus = [MAX] * 4
        cpus[odd_cpu] = MAX.with_overrides("ID_AA64ISAR0_EL1", "AES", 0)
        s = system(*cpus)
        for i in range(4):
            v = s.emulate_mrs(SYSREGS["ID_AA64ISAR0_EL1"], i)
            assert v == 0x1021111110212120 & ~0xF0
            assert field_value("ID_AA64ISAR0_EL1", "AES", v) == 0

    def test_aes_pmull_vs_aes_only(self) -> None:
        s = system(MAX, MAX.with_overrides("ID_AA64ISAR0_EL1", "AES", 1))
        assert s.user_field("ID_AA64ISAR0_EL1", "AES") == 1

    def test_one_cpu_without_sve(self) -> None:
        s = system(MAX, MAX.with_overrides("ID_AA64PFR0_EL1", "SVE", 0))
        assert s.sanitised_field("ID_AA64PFR0_EL1", "SVE") == 0
        assert s.user_value("ID_AA64PFR0_EL1") == 0x0000000000110011

    def test_lower_sve_version(self) -> None:
        a = MAX.with_overrides("ID_AA64ZFR0_EL1", "SVEver", 1).with_overrides(
            "ID_AA64ZFR0_EL1", "BitPerm", 1)
        b = MAX.with_overrides("ID_AA64ZFR0_EL1", "SVEver", 0).with_overrides(
            "ID_AA64ZFR0_EL1", "BitPerm", 1)
        s = system(a, b, a)
        assert s.user_field("ID_AA64ZFR0_EL1", "SVEver") == 0
        assert s.user_field("ID_AA64ZFR0_EL1", "BitPerm") == 1
        assert s.emulate_mrs(SYSREGS["ID_AA64ZFR0_EL1"], 0) == 0x10000

    def test_signed_fp_missing_wins(self) -> None:
        # FP is signed: 0b1111 (-1, not implemented) is "lower" than 0b0001.
        nofp = MAX.with_overrides("ID_AA64PFR0_EL1", "FP", -1)
        assert nofp.raw("ID_AA64PFR0_EL1") & 0xF0000 == 0xF0000
        s = system(MAX, nofp)
        assert s.sanitised_field("ID_AA64PFR0_EL1", "FP") == -1
        assert s.user_value("ID_AA64PFR0_EL1") & 0xF0000 == 0xF0000
        # ...whereas an unsigned min would have picked 1.
        assert s.sanitised_field("ID_AA64PFR0_EL1", "AdvSIMD") == 1

    def test_signed_tgran4(self) -> None:
        a = MAX.with_overrides("ID_AA64MMFR0_EL1", "TGRAN4", 1)  # 52-bit with 4K
        b = MAX.with_overrides("ID_AA64MMFR0_EL1", "TGRAN4", -1)  # no 4K
        assert sanitise("ID_AA64MMFR0_EL1", [a.raw("ID_AA64MMFR0_EL1"),
                                             b.raw("ID_AA64MMFR0_EL1")]) >> 28 & 0xF == 0xF

    @pytest.mark.parametrize("reg,field,a,b,expect", [
        ("ID_AA64ISAR1_EL1", "APA", 1, 2, 0),          # EXACT, safe 0
        ("ID_AA64ISAR1_EL1", "API", 0, 1, 0),
        ("ID_AA64DFR0_EL1", "DebugVer", 8, 9, 6),      # EXACT, safe 6
        ("ID_AA64DFR0_EL1", "PMUVer", 5, 4, 0),        # EXACT signed, safe 0
        ("ID_AA64MMFR0_EL1", "TGRAN4_2", 2, 0, 1),     # EXACT, safe 1
        ("ID_AA64MMFR1_EL1", "SpecSEI", 0, 1, 1),      # HIGHER_SAFE
        ("ID_MMFR4_EL1", "SpecSEI", 1, 0, 1),          # HIGHER_SAFE (AArch32)
        ("ID_AA64MMFR0_EL1", "PARANGE", 5, 2, 2),      # LOWER_SAFE
        ("ID_AA64ISAR1_EL1", "APA", 1, 1, 1),          # EXACT, equal -> kept
    ])
    def test_safe_value_types(self, reg: str, field: str, a: int, b: int, expect: int) -> None:
        s = system(MAX.with_overrides(reg, field, a), MAX.with_overrides(reg, field, b))
        assert s.sanitised_field(reg, field) == expect

    def test_exact_three_cpus_back_to_safe(self) -> None:
        # CPU values 1, 2, 0 for an EXACT field with safe 0: stays 0 after mismatch.
        vals = [MAX.with_overrides("ID_AA64ISAR1_EL1", "APA", v) for v in (1, 2, 0)]
        assert system(*vals).sanitised_field("ID_AA64ISAR1_EL1", "APA") == 0

    def test_midr_follows_cpu_index(self) -> None:
        little = MAX.with_overrides("MIDR_EL1", "Implementer", 0x41).with_overrides(
            "MIDR_EL1", "PartNum", 0xD05)  # Cortex-A55
        big = MAX.with_overrides("MIDR_EL1", "Implementer", 0x41).with_overrides(
            "MIDR_EL1", "PartNum", 0xD0B)  # Cortex-A76
        cpus = [little.with_overrides("MPIDR_EL1", "Aff0", i) for i in range(4)] + \
               [big.with_overrides("MPIDR_EL1", "Aff1", 1) for _ in range(2)]
        s = system(*cpus)
        midr = SYSREGS["MIDR_EL1"]
        for i, cpu in enumerate(cpus):
            assert s.emulate_mrs(midr, i) == cpu.midr
            assert s.emulate_mrs(SYSREGS["MPIDR_EL1"], i) == SYS_MPIDR_SAFE_VAL
            assert s.emulate_mrs(SYSREGS["REVIDR_EL1"], i) == 0
        assert s.emulate_mrs(midr, 0) == 0x410FD050
        assert s.emulate_mrs(midr, 5) == 0x410FD0B0

    def test_revidr_nonzero_still_reads_zero(self) -> None:
        s = system(MAX.with_raw("REVIDR_EL1", 0x1234))
        assert s.emulate_mrs(SYSREGS["REVIDR_EL1"], 0) == 0

    def test_cpu_index_range(self) -> None:
        s = SystemIdRegs.homogeneous(2)
        with pytest.raises(IndexError):
            s.emulate_mrs(SYSREGS["MIDR_EL1"], 2)
        with pytest.raises(IndexError):
            s.emulate_mrs(SYSREGS["ID_AA64ISAR0_EL1"], -1)

    def test_aarch32_regs_need_boot_cpu_aarch32(self) -> None:
        no32 = MAX.with_overrides("ID_AA64PFR0_EL1", "EL0", 1)
        s = system(no32, MAX)
        assert not s.aarch32_el0
        assert s.emulate_mrs(SYSREGS["ID_ISAR5_EL1"], 1) == 0
        assert s.emulate_mrs(SYSREGS["MVFR1_EL1"], 1) == 0
        # AArch64 registers unaffected.
        assert s.emulate_mrs(SYSREGS["ID_AA64ISAR0_EL1"], 0) == 0x1021111110212120

    def test_aarch32_regs_skip_cpus_without_aarch32(self) -> None:
        # A secondary without AArch32 EL0 does not contribute to AArch32 regs.
        no32 = MAX.with_overrides("ID_AA64PFR0_EL1", "EL0", 1).with_raw("ID_ISAR5_EL1", 0)
        s = system(MAX, no32)
        assert s.emulate_mrs(SYSREGS["ID_ISAR5_EL1"], 1) == 0x00011120
        # The AArch64 view still says "AArch64 only" at EL0 (hidden, safe 1).
        assert s.user_field("ID_AA64PFR0_EL1", "EL0") == 1
        assert s.sanitised_field("ID_AA64PFR0_EL1", "EL0") == 1

    def test_disabled_config_hides_field(self) -> None:
        s = SystemIdRegs.homogeneous(1, disabled_configs={cf.CONFIG_SVE, cf.CONFIG_BTI})
        assert s.sanitised_field("ID_AA64PFR0_EL1", "SVE") == 1
        assert s.user_field("ID_AA64PFR0_EL1", "SVE") == 0
        assert s.emulate_mrs(SYSREGS["ID_AA64PFR1_EL1"], 0) == 0

    def test_with_overrides_validates(self) -> None:
        with pytest.raises(ValueError):
            MAX.with_overrides("ID_AA64ISAR0_EL1", "AES", 16)
        with pytest.raises(ValueError):
            MAX.with_overrides("ID_AA64ISAR0_EL1", "AES", -1)  # unsigned field
        with pytest.raises(KeyError):
            MAX.with_overrides("ID_AA64ISAR0_EL1", "NOPE", 1)
        # Original untouched (immutability).
        assert MAX.field("ID_AA64ISAR0_EL1", "AES") == 2

    def test_sanitise_requires_cpus(self) -> None:
        with pytest.raises(ValueError):
            sanitise("ID_AA64ISAR0_EL1", [])
        with pytest.raises(ValueError):
            SystemIdRegs([])


# ---------------------------------------------------------------------------
# Emulated space / dispatch
# ---------------------------------------------------------------------------

SYS1 = SystemIdRegs.homogeneous(2)


class TestEmulationSpace:
    @pytest.mark.parametrize("reg", [
        SysReg(3, 0, 0, 4, 3), SysReg(3, 0, 0, 4, 6), SysReg(3, 0, 0, 4, 7),
        SysReg(3, 0, 0, 5, 2), SysReg(3, 0, 0, 5, 7), SysReg(3, 0, 0, 6, 3),
        SysReg(3, 0, 0, 6, 7), SysReg(3, 0, 0, 7, 4), SysReg(3, 0, 0, 7, 7),
        SysReg(3, 0, 0, 3, 3), SysReg(3, 0, 0, 3, 7),
        SYSREGS["ID_AA64AFR0_EL1"], SYSREGS["ID_AA64AFR1_EL1"],
        SYSREGS["ID_AA64MMFR3_EL1"], SYSREGS["ID_AA64PFR2_EL1"],
    ], ids=lambda r: r.name)
    def test_untracked_in_space_reads_zero(self, reg: SysReg) -> None:
        assert is_emulated(reg)
        assert SYS1.emulate_mrs(reg, 1) == 0

    def test_untracked_ignores_raw(self) -> None:
        s = system(MAX.with_raw("ID_AA64AFR0_EL1", 0xDEAD).with_raw("ID_AA64MMFR3_EL1", 0x11))
        assert s.emulate_mrs(SYSREGS["ID_AA64AFR0_EL1"], 0) == 0
        assert s.emulate_mrs(SYSREGS["ID_AA64MMFR3_EL1"], 0) == 0
        assert s.sanitised("ID_AA64AFR0_EL1") == 0

    def test_reserved_bits_read_zero(self) -> None:
        junk = MAX.with_raw("ID_AA64ISAR0_EL1", (1 << 64) - 1)
        s = system(junk)
        # TLB hidden -> 0, reserved [27:24] and [3:0] -> 0.
        assert s.sanitised("ID_AA64ISAR0_EL1") == 0xFFFF_FFFF_F0FF_FFF0
        assert s.user_value("ID_AA64ISAR0_EL1") == 0xF0FF_FFFF_F0FF_FFF0

    @pytest.mark.parametrize("reg", [
        *[SysReg(3, 0, 0, 0, op2) for op2 in (1, 2, 3, 4, 7)],       # CRm=0 non-ident
        *[SysReg(3, 0, 0, 1, op2) for op2 in range(8)],             # AArch32 CRm=1
        *[SysReg(3, 0, 0, crm, 0) for crm in range(8, 16)],         # CRm >= 8
        SysReg(3, 1, 0, 0, 0), SysReg(3, 1, 0, 0, 4),               # Op1 != 0
        SysReg(2, 0, 0, 6, 0),                                      # Op0 == 2
        SysReg(3, 0, 1, 6, 0),                                      # CRn != 0
        *(SYSREGS[n] for n in ("CTR_EL0", "DCZID_EL0", "CNTVCT_EL0", "CNTFRQ_EL0",
                               "TPIDR_EL0", "CurrentEL", "ZCR_EL1", "CPACR_EL1",
                               "SPSR_EL1", "ELR_EL1", "ESR_EL1", "CNTKCTL_EL1",
                               "CPTR_EL3", "ZCR_EL2", "ZCR_EL3", "SCTLR_EL1")),
    ], ids=lambda r: r.name)
    def test_out_of_space_is_sigill(self, reg: SysReg) -> None:
        assert SYS1.emulate_mrs(reg, 0) is None

    def test_is_emulated_exhaustive_over_crn0(self) -> None:
        for crm, op2 in itertools.product(range(16), range(8)):
            reg = SysReg(3, 0, 0, crm, op2)
            assert is_emulated(reg) == (crm == 0 or 2 <= crm <= 7)

    @pytest.mark.parametrize("name,value", sorted(MAX_EL0.items()))
    @pytest.mark.parametrize("rt", [0, 3, 30, 31])
    def test_try_emulate_from_keystone_word(self, name: str, value: int, rt: int) -> None:
        xreg = "xzr" if rt == 31 else f"x{rt}"
        word = ks_word(f"mrs {xreg}, {SYSREGS[name].generic_name}")
        assert try_emulate_mrs_value(word, 1, SYS1) == (rt, value)

    def test_try_emulate_by_name(self) -> None:
        word = ks_word("mrs x3, ID_AA64ISAR0_EL1")
        assert word == 0xD5380603
        assert try_emulate_mrs_value(word, 0, SYS1) == (3, 0x1021111110212120)

    @pytest.mark.parametrize("asm", ["mrs x0, ctr_el0", "mrs x1, cntvct_el0",
                                     "mrs x2, tpidr_el0", "mrs x3, ID_PFR0_EL1",
                                     "msr tpidr_el0, x1", "nop",
                                     "msr S3_0_C0_C6_0, x3", "mrs x4, S3_0_C0_C0_1"])
    def test_try_emulate_rejects(self, asm: str) -> None:
        assert try_emulate_mrs_value(ks_word(asm), 0, SYS1) is None

    def test_try_emulate_esr(self) -> None:
        reg = SYSREGS["ID_AA64PFR0_EL1"]
        assert try_emulate_mrs_esr(encode_esr_sys64_iss(reg, 9, True), 1, SYS1) == \
            (9, 0x0000000100110011)
        assert try_emulate_mrs_esr(encode_esr_sys64_iss(reg, 9, False), 1, SYS1) is None
        ctr = SYSREGS["CTR_EL0"]
        assert try_emulate_mrs_esr(encode_esr_sys64_iss(ctr, 9, True), 1, SYS1) is None


# ---------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------

_u64 = st.integers(0, (1 << 64) - 1)
_reg_names = st.sampled_from(sorted(FTR_REGS))


class TestProperties:
    @settings(max_examples=150, deadline=None)
    @given(_reg_names, st.lists(_u64, min_size=1, max_size=5), st.randoms())
    def test_order_independent(self, reg: str, raws: list[int], rnd) -> None:
        shuffled = list(raws)
        rnd.shuffle(shuffled)
        assert sanitise(reg, raws) == sanitise(reg, shuffled)

    @settings(max_examples=150, deadline=None)
    @given(_reg_names, st.lists(_u64, min_size=1, max_size=5))
    def test_field_rules(self, reg: str, raws: list[int]) -> None:
        out = sanitise(reg, raws)
        table = FTR_REGS[reg]
        assert out & ~table.valid_mask == 0
        for f in table.fields:
            vals = [f.extract(r) for r in raws]
            got = f.extract(out)
            if f.type is FtrType.LOWER_SAFE:
                assert got == min(vals)
            elif f.type is FtrType.HIGHER_SAFE:
                assert got == max(vals)
            elif f.type is FtrType.EXACT:
                expect = vals[0] if len(set(vals)) == 1 else f.extract(f.safe_val << f.shift)
                assert got == expect

    @settings(max_examples=150, deadline=None)
    @given(_reg_names, _u64)
    def test_homogeneous_is_masked_raw(self, reg: str, raw: int) -> None:
        assert sanitise(reg, [raw, raw, raw]) == raw & FTR_REGS[reg].valid_mask

    @settings(max_examples=150, deadline=None)
    @given(_reg_names, _u64)
    def test_user_view_fields(self, reg: str, san: int) -> None:
        u = user_view(reg, san)
        table = FTR_REGS[reg]
        assert u & ~table.valid_mask == 0
        for f in table.fields:
            assert f.raw(u) == (f.raw(san) if f.visible else f.safe_val)

    @settings(max_examples=100, deadline=None)
    @given(st.sampled_from(sorted(n for n in FTR_REGS if not FTR_REGS[n].aarch32)),
           st.lists(_u64, min_size=1, max_size=4))
    def test_system_matches_functions(self, reg: str, raws: list[int]) -> None:
        cpus = [MAX.with_raw(reg, r) for r in raws]
        s = SystemIdRegs(cpus)
        assert s.sanitised(reg) == sanitise(reg, raws)
        assert s.emulate_mrs(SYSREGS[reg], len(cpus) - 1) == user_view(reg, sanitise(reg, raws))

    def test_untracked_sanitise_is_zero(self) -> None:
        assert sanitise("ID_AA64AFR0_EL1", [0x1234]) == 0
        assert user_view("ID_AA64AFR0_EL1", 0x1234) == 0
        with pytest.raises(KeyError):
            sanitise("BOGUS_EL1", [0])
