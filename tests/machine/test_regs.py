"""emukern.machine.regs: every register name maps to the right Unicorn engine id on both
architectures -- checked against the constant the name stands for, and by a round trip through a
real Unicorn instance (a value written by name is read back by the engine id); and the Cpu-level
helpers (Cpu.regid / reg_read / reg_write) on real CPUs."""
from __future__ import annotations

import pytest
from unicorn import UC_ARCH_ARM64, UC_ARCH_RISCV, UC_MODE_ARM, UC_MODE_RISCV64, Uc
from unicorn import arm64_const as A
from unicorn import riscv_const as R

from emukern.machine import regs
from emukern.machine.clock import Clock

RV_ABI = ["zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1", "a2", "a3", "a4", "a5",
          "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6"]
RV_FP_ABI = ["ft0", "ft1", "ft2", "ft3", "ft4", "ft5", "ft6", "ft7", "fs0", "fs1", "fa0", "fa1", "fa2", "fa3",
             "fa4", "fa5", "fa6", "fa7", "fs2", "fs3", "fs4", "fs5", "fs6", "fs7", "fs8", "fs9", "fs10", "fs11",
             "ft8", "ft9", "ft10", "ft11"]


def _expected_arm64() -> dict[str, str]:
    """name -> the unicorn.arm64_const constant it must be (the specification)."""
    e = {f"x{i}": f"UC_ARM64_REG_X{i}" for i in range(31)}
    e |= {f"w{i}": f"UC_ARM64_REG_W{i}" for i in range(31)}
    e |= {"fp": "UC_ARM64_REG_X29", "lr": "UC_ARM64_REG_X30", "sp": "UC_ARM64_REG_SP", "pc": "UC_ARM64_REG_PC",
          "nzcv": "UC_ARM64_REG_NZCV", "cpsr": "UC_ARM64_REG_NZCV", "pstate": "UC_ARM64_REG_PSTATE",
          "tpidr_el0": "UC_ARM64_REG_TPIDR_EL0", "tpidrro_el0": "UC_ARM64_REG_TPIDRRO_EL0",
          "tpidr_el1": "UC_ARM64_REG_TPIDR_EL1", "fpcr": "UC_ARM64_REG_FPCR", "fpsr": "UC_ARM64_REG_FPSR",
          "cpacr_el1": "UC_ARM64_REG_CPACR_EL1", "sp_el0": "UC_ARM64_REG_SP_EL0", "sp_el1": "UC_ARM64_REG_SP_EL1",
          "elr_el1": "UC_ARM64_REG_ELR_EL1", "esr_el1": "UC_ARM64_REG_ESR_EL1", "far_el1": "UC_ARM64_REG_FAR_EL1",
          "vbar_el1": "UC_ARM64_REG_VBAR_EL1", "cp_reg": "UC_ARM64_REG_CP_REG"}
    for k in "vqds":
        e |= {f"{k}{i}": f"UC_ARM64_REG_{k.upper()}{i}" for i in range(32)}
    return e


def _expected_riscv64() -> dict[str, str]:
    e = {f"x{i}": f"UC_RISCV_REG_X{i}" for i in range(32)}
    e |= {abi: f"UC_RISCV_REG_X{i}" for i, abi in enumerate(RV_ABI)}
    e["fp"] = "UC_RISCV_REG_X8"
    e |= {f"f{i}": f"UC_RISCV_REG_F{i}" for i in range(32)}
    e |= {abi: f"UC_RISCV_REG_F{i}" for i, abi in enumerate(RV_FP_ABI)}
    e["pc"] = "UC_RISCV_REG_PC"
    for n in ("fflags", "frm", "fcsr", "priv", "mstatus", "sstatus", "misa", "mvendorid", "marchid", "mimpid",
              "mhartid", "mepc", "mcause", "mtval", "sepc", "scause", "stval", "satp"):
        e[n] = f"UC_RISCV_REG_{n.upper()}"
    return e


CASES = {
    "arm64": (_expected_arm64(), A, lambda: Uc(UC_ARCH_ARM64, UC_MODE_ARM)),
    "riscv64": (_expected_riscv64(), R, lambda: _riscv_uc()),
}


def _riscv_uc() -> Uc:
    uc = Uc(UC_ARCH_RISCV, UC_MODE_RISCV64)
    uc.reg_write(R.UC_RISCV_REG_MSTATUS, 1 << 13)     # FS Initial (as RiscvCpu): fflags/frm/fcsr accessible
    return uc
# no round trip: not a plain register (cp_reg takes a tuple), or read-only / WARL-fixed on Unicorn's hart
NO_ROUND_TRIP = {"arm64": {"cp_reg", "pstate"},
                 "riscv64": {"misa", "mvendorid", "marchid", "mimpid", "mhartid", "priv"}}
CANDIDATES = (0xA5A5_5A5A_C3C3_3C3C_0F0F_F0F0_9696_6969, 0x5A5A_A5A5_3C3C_C3C3_F0F0_0F0F_6969_9696,
              0xF000_0000, 0x0300_0000, 0x8000_009F, 0x1000, 3, 1)


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_every_name_is_its_constant(arch: str) -> None:
    expected, const, _ = CASES[arch]
    assert set(regs.names(arch)) == set(expected)
    for name, cname in expected.items():
        assert regs.regid(arch, name) == getattr(const, cname), name
        assert regs.regid(arch, name.upper()) == getattr(const, cname)
    with pytest.raises(KeyError):
        regs.regid(arch, "nosuchreg")


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_round_trip_through_unicorn(arch: str) -> None:
    """Write by name on one instance, read by the engine id: the value a write by that id gives
    on a twin instance (registers keep only some bits), and different from what was there."""
    expected, const, new = CASES[arch]
    uc, ref = new(), new()
    checked = 0
    for name, cname in expected.items():
        if name in NO_ROUND_TRIP[arch]:
            continue
        eid = getattr(const, cname)
        before = uc.reg_read(eid)
        exp = None
        for cand in CANDIDATES:
            v = cand & ((1 << regs.bits(arch, name)) - 1)
            ref.reg_write(eid, v)
            exp = ref.reg_read(eid)
            if exp != before:
                break
        assert exp != before, f"{name}: no value observable through {cname}"
        uc.reg_write(regs.regid(arch, name), v)
        assert uc.reg_read(eid) == exp, f"{name} -> {cname}"
        checked += 1
    assert checked >= len(expected) - len(NO_ROUND_TRIP[arch])


def test_tuples_and_helpers() -> None:
    assert regs.ARM64_X == tuple(getattr(A, f"UC_ARM64_REG_X{i}") for i in range(31))
    assert regs.ARM64_Q == tuple(getattr(A, f"UC_ARM64_REG_Q{i}") for i in range(32))
    assert (regs.ARM64_PC, regs.ARM64_SP, regs.ARM64_NZCV) == (A.UC_ARM64_REG_PC, A.UC_ARM64_REG_SP,
                                                              A.UC_ARM64_REG_NZCV)
    assert regs.RISCV64_X == tuple(getattr(R, f"UC_RISCV_REG_X{i}") for i in range(32))
    assert regs.RISCV64_F == tuple(getattr(R, f"UC_RISCV_REG_F{i}") for i in range(32))
    assert regs.RISCV64_PC == R.UC_RISCV_REG_PC
    assert regs.regids("arm64", "x0", "sp", "pc") == (A.UC_ARM64_REG_X0, A.UC_ARM64_REG_SP, A.UC_ARM64_REG_PC)
    assert regs.bits("arm64", "v3") == 128 and regs.bits("arm64", "x3") == 64 and regs.bits("riscv64", "f3") == 64
    assert regs.arch_of_uc(UC_ARCH_ARM64) == "arm64" and regs.arch_of_uc(UC_ARCH_RISCV) == "riscv64"
    with pytest.raises(ValueError):
        regs.table("x86")


def test_cpu_helpers_arm64() -> None:
    from emukern.machine.cpu_arm64 import Arm64Cpu
    cpu = Arm64Cpu(0, Clock(), sve_vl=128)
    assert cpu.regid("x7") == A.UC_ARM64_REG_X7
    cpu.reg_write("x7", 0x1122_3344_5566_7788)
    assert cpu.uc.reg_read(A.UC_ARM64_REG_X7) == 0x1122_3344_5566_7788 == cpu.reg_read("x7") == cpu.reg(7)
    assert cpu.reg_read("w7") == 0x5566_7788
    cpu.reg_write("lr", 0xDEAD)
    assert cpu.reg(30) == 0xDEAD
    cpu.reg_write("v5", (1 << 127) | 0xABC)
    assert cpu.uc.reg_read(A.UC_ARM64_REG_Q5) == (1 << 127) | 0xABC == cpu.reg_read("q5")
    cpu.reg_write("tpidr_el0", 0x4000)
    assert cpu.save_context()["tpidr"] == 0x4000
    cpu.reg_write("pc", 0x1234_0000)
    assert cpu.get_pc() == 0x1234_0000 == cpu.reg_read("pc")
    with pytest.raises(ValueError):
        cpu.reg_read("cp_reg")
    with pytest.raises(KeyError):
        cpu.reg_read("a0")


def test_cpu_helpers_riscv64() -> None:
    from emukern.machine.cpu_riscv import RiscvCpu
    cpu = RiscvCpu(0, Clock(), vlen=128)
    assert cpu.regid("a0") == R.UC_RISCV_REG_X10
    cpu.reg_write("a0", 0x77)
    assert cpu.uc.reg_read(R.UC_RISCV_REG_X10) == 0x77 == cpu.reg_read("x10") == cpu.reg(10)
    cpu.reg_write("fa1", 0x3FF0_0000_0000_0000)
    assert cpu.uc.reg_read(R.UC_RISCV_REG_F11) == 0x3FF0_0000_0000_0000
    # a privileged CSR through the helpers: read at M-mode, the hart left in U-mode
    assert cpu.reg_read("mstatus") == cpu._mstatus()
    assert cpu.uc.reg_read(R.UC_RISCV_REG_PRIV) == 0
    cpu.reg_write("pc", 0x10_0000)
    assert cpu.get_pc() == 0x10_0000 == cpu.reg_read("pc")
    with pytest.raises(KeyError):
        cpu.reg_read("lr")
