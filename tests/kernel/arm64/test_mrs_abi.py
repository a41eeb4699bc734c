"""EL0 MRS emulation ABI (seed 001: "no functional change"): every test runs under both
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
from emukern.kernel.arm64.cpufeature import (FTR_REGS, SYS_MPIDR_SAFE_VAL, SystemIdRegs,
                                              build_cpu_id_regs, decode_fields)
from emukern.kernel.arm64.sysreg import SYSREGS, SysReg

GUEST = Path(__file__).resolve().parents[3] / "guest_asm" / "arm64"

# the order mrs_regs.S reads them in
IDENT = [SYSREGS["MIDR_EL1"], SYSREGS["MPIDR_EL1"], SYSREGS["REVIDR_EL1"]]
SPACE = IDENT + [SysReg(3, 0, 0, crm, op2) for crm in range(2, 8) for op2 in range(8)]

# user-visible values the cpufeature helper reported for Unicorn's `max` CPU
MAX_ISAR0 = 0x1021111110212120
MAX_PFR0 = 0x0000000100110011
MAX_MIDR = 0x000F0510
A76_MIDR = 0x410FD0C0

MODES = [pytest.param((pol, idst), id=f"{pol}-{'idst' if idst else 'undef'}")
         for pol in ("hook-list", "direct") for idst in (False, True)]


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> tuple[str, bool]:
    return request.param


def run(mode: tuple[str, bool], prog: str, argv: list[str] | None = None, **opts) -> tuple:
    pol, idst = mode
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
    overrides = {2: {"MIDR_EL1": A76_MIDR}, 3: {"MIDR_EL1.Variant": 1}}
    r, m = run(mode, "mrs_midr.S", ["4"], cpus=4, cpu_id_overrides=overrides)
    assert r.exit_status == 0, r.message
    w = words(r.stdout)
    rows = [w[i:i + 3] for i in range(0, 12, 3)]
    midrs = [MAX_MIDR, MAX_MIDR, A76_MIDR, MAX_MIDR | (1 << 20)]
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
