"""Register names <-> Unicorn engine register ids, for both architectures.

The kernel, the debugger and the gdb stub name registers; only this module knows Unicorn's ids
(``unicorn.arm64_const`` / ``unicorn.riscv_const``).  Names are lower case.

arm64 (:data:`ARM64_REGS`): x0-x30, w0-w30 (the low 32 bits of x), fp (x29), lr (x30), sp (the
engine's current SP: SP_EL0 once the CPU runs at EL0), sp_el0, sp_el1, pc, nzcv (also cpsr),
pstate, tpidr_el0, tpidrro_el0, tpidr_el1, fpcr, fpsr, v0-v31 and q0-q31 (the same 128-bit
registers), d0-d31, s0-s31, cpacr_el1, elr_el1, esr_el1, far_el1, vbar_el1, and cp_reg (the
engine's generic system-register access: its value is a (crn, crm, op0, op1, op2[, value])
tuple, not an int — use ``Arm64Cpu.cpr_read``/``cpr_write``).

riscv64 (:data:`RISCV64_REGS`): x0-x31 and their ABI names (zero, ra, sp, gp, tp, t0-t6, s0-s11,
a0-a7, and fp = s0), pc, f0-f31 and their ABI names (ft0-ft11, fs0-fs11, fa0-fa7), fflags, frm,
fcsr, priv (the hart's privilege level), and the CSRs mstatus, sstatus, misa, mvendorid,
marchid, mimpid, mhartid, mepc, mcause, mtval, sepc, scause, stval, satp.  (cycle, time and
instret are left out on purpose: Unicorn answers them with host ticks, emukern's clock gives
the guest its own values.)

Hot paths keep ids, not names: build module-level tuples once with :func:`regids` (Cpu's batch
readers and writers cache their closures by the tuple's identity).
"""
from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from unicorn import arm64_const as _A
from unicorn import riscv_const as _R

__all__ = ["ARM64", "RISCV64", "ARM64_REGS", "RISCV64_REGS", "RV_ABI", "RV_FP_ABI", "REGS", "table", "regid",
           "regids", "names", "bits", "arch_of_uc", "ARM64_X", "ARM64_Q", "ARM64_PC", "ARM64_SP", "ARM64_NZCV",
           "RISCV64_X", "RISCV64_F", "RISCV64_PC"]

ARM64 = "arm64"
RISCV64 = "riscv64"

RV_ABI = ("zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1", "a2", "a3",
          "a4", "a5", "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11",
          "t3", "t4", "t5", "t6")
RV_FP_ABI = ("ft0", "ft1", "ft2", "ft3", "ft4", "ft5", "ft6", "ft7", "fs0", "fs1", "fa0", "fa1",
             "fa2", "fa3", "fa4", "fa5", "fa6", "fa7", "fs2", "fs3", "fs4", "fs5", "fs6", "fs7",
             "fs8", "fs9", "fs10", "fs11", "ft8", "ft9", "ft10", "ft11")


def _c(mod: object, name: str) -> int:
    return int(getattr(mod, name))


def _arm64_table() -> dict[str, int]:
    t: dict[str, int] = {}
    for i in range(31):
        t[f"x{i}"] = _c(_A, f"UC_ARM64_REG_X{i}")       # (x29, x30 are not after x28 in Unicorn)
    for i in range(31):
        t[f"w{i}"] = _c(_A, f"UC_ARM64_REG_W{i}")
    t["fp"], t["lr"] = t["x29"], t["x30"]
    for name in ("sp", "pc", "nzcv", "pstate", "tpidr_el0", "tpidrro_el0", "tpidr_el1", "fpcr", "fpsr",
                 "cpacr_el1", "sp_el0", "sp_el1", "elr_el1", "esr_el1", "far_el1", "vbar_el1", "cp_reg"):
        t[name] = _c(_A, f"UC_ARM64_REG_{name.upper()}")
    t["cpsr"] = t["nzcv"]
    for i in range(32):
        t[f"v{i}"] = _c(_A, f"UC_ARM64_REG_V{i}")
        t[f"q{i}"] = _c(_A, f"UC_ARM64_REG_Q{i}")
        t[f"d{i}"] = _c(_A, f"UC_ARM64_REG_D{i}")
        t[f"s{i}"] = _c(_A, f"UC_ARM64_REG_S{i}")
    return t


def _riscv64_table() -> dict[str, int]:
    t: dict[str, int] = {}
    for i in range(32):
        t[f"x{i}"] = _c(_R, f"UC_RISCV_REG_X{i}")
    for i, abi in enumerate(RV_ABI):
        t[abi] = t[f"x{i}"]
    t["fp"] = t["s0"]
    t["pc"] = _c(_R, "UC_RISCV_REG_PC")
    for i in range(32):
        t[f"f{i}"] = _c(_R, f"UC_RISCV_REG_F{i}")
    for i, abi in enumerate(RV_FP_ABI):
        t[abi] = t[f"f{i}"]
    for name in ("fflags", "frm", "fcsr", "priv", "mstatus", "sstatus", "misa", "mvendorid", "marchid",
                 "mimpid", "mhartid", "mepc", "mcause", "mtval", "sepc", "scause", "stval", "satp"):
        t[name] = _c(_R, f"UC_RISCV_REG_{name.upper()}")
    return t


ARM64_REGS: Mapping[str, int] = MappingProxyType(_arm64_table())
RISCV64_REGS: Mapping[str, int] = MappingProxyType(_riscv64_table())
REGS: Mapping[str, Mapping[str, int]] = MappingProxyType({ARM64: ARM64_REGS, RISCV64: RISCV64_REGS})

# widths in bits where not 64
_ARM64_BITS = {**{f"v{i}": 128 for i in range(32)}, **{f"q{i}": 128 for i in range(32)},
               **{f"w{i}": 32 for i in range(31)}, **{f"s{i}": 32 for i in range(32)},
               "nzcv": 32, "cpsr": 32, "pstate": 32, "fpcr": 32, "fpsr": 32}


def table(arch: str) -> Mapping[str, int]:
    """Every name of ``arch`` ("arm64" or "riscv64") -> its engine id."""
    try:
        return REGS[arch]
    except KeyError:
        raise ValueError(f"unknown architecture {arch!r} (arm64 or riscv64)") from None


def regid(arch: str, name: str) -> int:
    """The Unicorn engine id of register ``name`` on ``arch``; KeyError for an unknown name."""
    t = table(arch)
    try:
        return t[name]
    except KeyError:
        low = name.lower()
        if low in t:
            return t[low]
        raise KeyError(f"no register {name!r} on {arch}") from None


def regids(arch: str, *names: str) -> tuple[int, ...]:
    """The engine ids of ``names``, in order (build hot-path tuples once, at module level)."""
    return tuple(regid(arch, n) for n in names)


def names(arch: str) -> tuple[str, ...]:
    """Every register name :func:`regid` accepts on ``arch``."""
    return tuple(table(arch))


def bits(arch: str, name: str) -> int:
    """The register's width in bits as the engine reads and writes it (64 unless noted:
    arm64 v/q 128, w/s and nzcv/pstate/fpcr/fpsr 32; riscv64 all 64)."""
    regid(arch, name)
    return _ARM64_BITS.get(name.lower(), 64) if arch == ARM64 else 64


def arch_of_uc(uc_arch: int) -> str:
    """"arm64" or "riscv64" for a Unicorn ``UC_ARCH_*`` value (``uc.ctl_get_arch()``)."""
    from unicorn import UC_ARCH_ARM64, UC_ARCH_RISCV
    if uc_arch == UC_ARCH_ARM64:
        return ARM64
    if uc_arch == UC_ARCH_RISCV:
        return RISCV64
    raise ValueError(f"not an emukern architecture: UC_ARCH {uc_arch}")


# ready-made id tuples for hot paths
ARM64_X: tuple[int, ...] = regids(ARM64, *[f"x{i}" for i in range(31)])      # x0..x30
ARM64_Q: tuple[int, ...] = regids(ARM64, *[f"q{i}" for i in range(32)])      # q0..q31
ARM64_PC = ARM64_REGS["pc"]
ARM64_SP = ARM64_REGS["sp"]
ARM64_NZCV = ARM64_REGS["nzcv"]
RISCV64_X: tuple[int, ...] = regids(RISCV64, *[f"x{i}" for i in range(32)])  # x0..x31
RISCV64_F: tuple[int, ...] = regids(RISCV64, *[f"f{i}" for i in range(32)])  # f0..f31
RISCV64_PC = RISCV64_REGS["pc"]
