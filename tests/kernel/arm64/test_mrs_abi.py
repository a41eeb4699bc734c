"""EL0 MRS emulation ABI ("arm64: rework EL0 MRS emulation": "no functional change"): every test runs under both
``arm64-mrs`` policies (hook-list = before, direct = after) and both FEAT_IDST settings (no IDST:
UNDEFINED -> do_el0_undef; IDST: EC 0x18 -> do_el0_sys).

Guests: guest_asm/arm64/mrs_regs.S (every register of the emulated space + XZR/Rt checks),
mrs_loop.S (PC stepping in a loop of mixed reads), mrs_midr.S (threads pinned to CPUs read
MIDR/MPIDR), mrs_sigill.S (reads outside the space and non-MRS undefined instructions).
"""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from emukern.api import Machine
from emukern.kernel.arch.arm64.cpufeature import (FTR_REGS, SYS_MPIDR_SAFE_VAL, SystemIdRegs,
                                              build_cpu_id_regs, decode_fields)
from emukern.kernel.arch.arm64.sysreg import SYSREGS, SysReg

GUEST = Path(__file__).resolve().parents[3] / "guest_asm" / "arm64"

# the order mrs_regs.S reads them in
IDENT = [SYSREGS["MIDR_EL1"], SYSREGS["MPIDR_EL1"], SYSREGS["REVIDR_EL1"]]
SPACE = IDENT + [SysReg(3, 0, 0, crm, op2) for crm in range(2, 8) for op2 in range(8)]

# Expected user-visible values, derived without the code under test: the raw register read by a
# real EL1 MRS on a bare Unicorn `max` CPU, masked with the visible-field tables of Linux's
# Documentation/arch/arm64/cpu-feature-registers.rst (section 4).  Rule (d) there: invisible fields
# read as "feature missing" — 0, except ID_AA64PFR0_EL1.EL0/EL1, which cannot be missing and read
# 0b0001 (AArch64 only; Linux's safe value ID_AA64PFR0_EL1_ELx_64BIT_ONLY for those hidden fields).
DOC_VISIBLE = {
    "ID_AA64ISAR0_EL1": [(60, "RNDR"), (52, "TS"), (48, "FHM"), (44, "DP"), (40, "SM4"), (36, "SM3"),
                         (32, "SHA3"), (28, "RDM"), (20, "ATOMICS"), (16, "CRC32"), (12, "SHA2"),
                         (8, "SHA1"), (4, "AES")],
    "ID_AA64PFR0_EL1": [(48, "DIT"), (32, "SVE"), (20, "AdvSIMD"), (16, "FP")],
    "MIDR_EL1": [(24, "Implementer", 8), (20, "Variant"), (16, "Architecture"), (4, "PartNum", 12),
                 (0, "Revision")],
}
DOC_INVISIBLE_VALUE = {"ID_AA64PFR0_EL1": (1 << 4) | (1 << 0)}     # EL1 = EL0 = 0b0001


def _raw_el1_mrs(enc: tuple[int, int, int, int, int]) -> int:
    from unicorn import UC_ARCH_ARM64, UC_MODE_ARM, Uc
    from unicorn.arm64_const import UC_ARM64_REG_X0, UC_CPU_ARM64_MAX
    op0, op1, crn, crm, op2 = enc
    insn = 0xD5300000 | ((op0 - 2) << 19) | (op1 << 16) | (crn << 12) | (crm << 8) | (op2 << 5)   # mrs x0
    uc = Uc(UC_ARCH_ARM64, UC_MODE_ARM)
    uc.ctl_set_cpu_model(UC_CPU_ARM64_MAX)
    uc.mem_map(0x1000, 0x1000)
    uc.mem_write(0x1000, insn.to_bytes(4, "little"))
    uc.emu_start(0x1000, 0x1004)
    return int(uc.reg_read(UC_ARM64_REG_X0))


def documented_user_value(name: str, enc: tuple[int, int, int, int, int]) -> int:
    raw = _raw_el1_mrs(enc)
    out = DOC_INVISIBLE_VALUE.get(name, 0)
    for shift, _field, *width in DOC_VISIBLE[name]:
        mask = ((1 << (width[0] if width else 4)) - 1) << shift
        out = (out & ~mask) | (raw & mask)
    return out


MAX_ISAR0 = documented_user_value("ID_AA64ISAR0_EL1", (3, 0, 0, 6, 0))
MAX_PFR0 = documented_user_value("ID_AA64PFR0_EL1", (3, 0, 0, 4, 0))
MAX_MIDR = documented_user_value("MIDR_EL1", (3, 0, 0, 0, 0))
# another CPU for heterogeneous machines: Arm (0x41), architecture 0xF, part 0xD0C (Neoverse N1), r0p0
N1_MIDR = 0x410FD0C0

MODES = [pytest.param((pol, idst), id=f"{pol}-{'idst' if idst else 'undef'}")
         for pol in ("hook-list", "direct") for idst in (False, True)]


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> tuple[str, bool]:
    return request.param


def run(mode: tuple[str, bool], prog: str, argv: list[str] | None = None, **opts) -> tuple:
    pol, idst = mode
    # the expected values are derived from a bare Unicorn `max` CPU (above), so run on that CPU
    # model rather than the default QEMU 7.2 `max` values (tests/kernel/versions cover those)
    opts.setdefault("arm64_cpu_model", "unicorn-max")
    m = Machine(arch="arm64", idst=idst, policies={"arm64-mrs": pol}, **opts)
    m.load(GUEST / prog, argv or [])
    r = m.run()
    return r, m


def words(data: bytes) -> list[int]:
    return list(struct.unpack(f"<{len(data) // 8}Q", data))


def expected(cpus: int = 1, overrides: dict | None = None, on_cpu: int = 0) -> dict[SysReg, int]:
    sysregs = SystemIdRegs(build_cpu_id_regs(cpus, overrides))
    out = {}
    for reg in SPACE:
        v = sysregs.emulate_mrs(reg, on_cpu)
        assert v is not None, reg
        out[reg] = v
    return out


def check_trap_path(r, m, mode, n_mrs: int) -> None:
    pol, idst = mode
    kind = "sysreg" if idst else "illegal"
    assert r.traps.get(kind, 0) == n_mrs
    locks = {lk["lock"]: lk for lk in r.locks}
    if pol == "hook-list" and not idst:
        assert locks["undef_lock"]["acquisitions"] == n_mrs      # every MRS walked the hook list
    else:
        assert "undef_lock" not in locks                          # lock-free


# ---- values ------------------------------------------------------------------------------------
@pytest.mark.parametrize("cpus", [1, 2])
def test_every_register_of_the_space(mode, cpus):
    r, m = run(mode, "mrs_regs.S", cpus=cpus)
    assert r.exit_status == 0, r.message
    got = words(r.stdout)
    assert len(got) == len(SPACE) + 10
    want = expected(cpus)
    for reg, v in zip(SPACE, got):
        assert v == want[reg], f"{reg.name}: {v:#x} != {want[reg]:#x}"
    vals = dict(zip(SPACE, got))
    assert vals[SYSREGS["ID_AA64ISAR0_EL1"]] == MAX_ISAR0
    assert vals[SYSREGS["ID_AA64PFR0_EL1"]] == MAX_PFR0
    assert vals[SYSREGS["MIDR_EL1"]] == MAX_MIDR
    assert vals[SYSREGS["MPIDR_EL1"]] == SYS_MPIDR_SAFE_VAL
    assert vals[SYSREGS["REVIDR_EL1"]] == 0
    check_trap_path(r, m, mode, len(SPACE) + 5)


def test_every_field_of_the_tracked_registers(mode):
    r, _ = run(mode, "mrs_regs.S")
    assert r.exit_status == 0
    vals = dict(zip(SPACE, words(r.stdout)))
    model = SystemIdRegs(build_cpu_id_regs(1))
    for name in FTR_REGS:
        reg = SYSREGS[name]
        if reg not in vals:
            continue                     # CRm=1 (AArch32 PFR/DFR/MMFR0-3) is outside the space
        assert decode_fields(name, vals[reg]) == decode_fields(name, model.user_value(name)), name


def test_untracked_and_reserved_read_zero(mode):
    r, _ = run(mode, "mrs_regs.S")
    vals = dict(zip(SPACE, words(r.stdout)))
    untracked = [reg for reg in SPACE[3:] if reg.name not in FTR_REGS]
    assert SYSREGS["ID_AA64AFR0_EL1"] in untracked and SysReg(3, 0, 0, 3, 3) in untracked
    for reg in untracked:
        assert vals[reg] == 0, reg.name


def test_xzr_target_and_rt_decoding(mode):
    r, _ = run(mode, "mrs_regs.S")
    tail = words(r.stdout)[len(SPACE):]
    assert tail[:7] == [0x1111 * j for j in range(1, 8)]   # `mrs xzr` changed no register
    model = SystemIdRegs(build_cpu_id_regs(1))
    assert tail[7:] == [model.user_value("ID_AA64PFR0_EL1"), model.user_value("ID_AA64MMFR0_EL1"),
                        model.user_value("ID_AA64ISAR1_EL1")]        # x5, x17, x30


@pytest.mark.parametrize("override,field,value", [
    ({"ID_AA64ISAR0_EL1.AES": 0}, ("ID_AA64ISAR0_EL1", "AES"), 0),
    ({"ID_AA64ISAR0_EL1.SHA2": 1}, ("ID_AA64ISAR0_EL1", "SHA2"), 1),
    ({"ID_AA64PFR0_EL1.SVE": 0}, ("ID_AA64PFR0_EL1", "SVE"), 0),
])
def test_heterogeneous_cpu_lacking_a_feature(mode, override, field, value):
    """CPU 1 lacks the feature: the sanitised field reads the safe value on every CPU."""
    cfg = {1: override}
    r, _ = run(mode, "mrs_regs.S", cpus=2, cpu_id_overrides=cfg)
    assert r.exit_status == 0
    vals = dict(zip(SPACE, words(r.stdout)))
    reg = SYSREGS[field[0]]
    assert decode_fields(field[0], vals[reg])[field[1]] == value
    assert vals[reg] == expected(2, cfg)[reg]
    if field == ("ID_AA64ISAR0_EL1", "AES"):
        assert vals[reg] == MAX_ISAR0 & ~0xF0


def test_heterogeneous_threads_on_every_cpu_agree(mode):
    """mrs_bench: 4 threads pinned to 4 CPUs (one without AES) all read the same sanitised value."""
    r, _ = run(mode, "mrs_bench.S", ["4", "20"], cpus=4,
               cpu_id_overrides={3: {"ID_AA64ISAR0_EL1.AES": 0}})
    assert r.exit_status == 0          # every thread saw the same non-zero value


def test_midr_follows_the_cpu_the_thread_runs_on(mode):
    overrides = {2: {"MIDR_EL1": N1_MIDR}, 3: {"MIDR_EL1.Variant": 1}}
    r, m = run(mode, "mrs_midr.S", ["4"], cpus=4, cpu_id_overrides=overrides)
    assert r.exit_status == 0, r.message
    w = words(r.stdout)
    rows = [w[i:i + 3] for i in range(0, 12, 3)]
    midrs = [MAX_MIDR, MAX_MIDR, N1_MIDR, MAX_MIDR | (1 << 20)]
    for i, (midr, mpidr, cpu) in enumerate(rows):
        assert cpu & 0xFFFFFFFF == i                       # getcpu: pinned to CPU i
        assert midr == midrs[i], f"thread on CPU {i}: MIDR {midr:#x}"
        assert mpidr == SYS_MPIDR_SAFE_VAL


# ---- PC stepping ---------------------------------------------------------------------------------
def test_pc_advances_in_a_loop_of_mixed_reads(mode):
    k = 300
    r, m = run(mode, "mrs_loop.S", [str(k)])
    assert r.exit_status == 0
    total, count = words(r.stdout)
    assert count == k
    assert total == (k * (MAX_ISAR0 + MAX_MIDR + MAX_PFR0)) & (2**64 - 1)
    check_trap_path(r, m, mode, 4 * k)


# ---- SIGILL ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("case,what", [(0, "S3_0_C0_C1_0 (CRm=1)"), (1, "SCTLR_EL1"),
                                       (2, ".inst 0x00000000"), (3, "msr to the ID space"),
                                       (4, "S3_0_C0_C0_1 (CRm=0)")])
def test_not_emulated_is_sigill_at_the_instruction(mode, case, what):
    r, m = run(mode, "mrs_sigill.S", [str(case)], cpus=2)
    assert r.stdout == b"go\n"
    assert r.exit_status == 132, what
    assert r.signal == 4 and r.fault is not None and r.fault["signame"] == "SIGILL"
    assert r.fault["pc"] == m.symbol(f"fault{case}"), what


def test_undef_hook_list_is_configured_by_the_abi_sysctls():
    """hook-list walks every hook: dropping SETEND emulation (2 hooks) saves 2 compares per MRS."""
    k = 100
    cyc = {}
    for setend in ("1", "0"):
        r, m = run(("hook-list", False), "mrs_loop.S", [str(k)], sysctls={"abi.setend": setend})
        assert r.exit_status == 0
        cyc[setend] = r.kernel_cycles
        names = [h.name for h in m.kernel.arm64_undef.hooks]
        if setend == "1":   # registered last -> walked first; mrs_hook (core_initcall, first) last
            assert names == ["setend_t16", "setend_a32", "cp15_barrier", "cp15_barrier", "mrs"]
        else:
            assert names == ["cp15_barrier", "cp15_barrier", "mrs"]
    compare = m.kernel.cost.undef_hook_compare
    assert cyc["1"] - cyc["0"] == 4 * k * 2 * compare
