"""Register access by name for the debugger and the gdb stub (both architectures).

RISC-V: x0-x31, their ABI names (zero, ra, sp, ..., fp = s0), pc, f0-f31, fcsr, and with V
v0-v31 and the vector CSRs (vl, vtype, vstart, vlenb, vxsat, vxrm, vcsr); the user counters
cycle, time, instret read emukern's clock exactly as the guest's rdcycle/rdtime/rdinstret do.
arm64: x0-x30, w0-w30, sp, pc, lr (x30), fp (x29), nzcv / cpsr, v0-v31 (128 bits), fpsr, fpcr,
tpidr_el0, and with SVE z0-z31 (VL bits), p0-p15 and ffr (VL/8 bits), vg (VL in 64-bit granules).
"""
from __future__ import annotations

from typing import Any

from emukern.debug.errors import DebugError
from emukern.machine import regs as machine_regs

MASK64 = (1 << 64) - 1

RV_ABI = ["zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1", "a2", "a3",
          "a4", "a5", "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11",
          "t3", "t4", "t5", "t6"]


RV_VECTOR_CSRS = ("vstart", "vxsat", "vxrm", "vcsr", "vl", "vtype", "vlenb")
RV_COUNTER_CSRS = ("cycle", "time", "instret")
SVE_NAMES = tuple([f"z{i}" for i in range(32)] + [f"p{i}" for i in range(16)] + ["ffr", "vg"])


def _arch(cpu: Any) -> str:
    return getattr(cpu, "arch", "")


def register_names(cpu: Any) -> list[str]:
    """Every name :func:`read_register` accepts on this CPU (lower case)."""
    if _arch(cpu) == "riscv64":
        return ([f"x{i}" for i in range(32)] + RV_ABI + ["fp", "pc"] + [f"f{i}" for i in range(32)] + ["fcsr"])
    return ([f"x{i}" for i in range(31)] + [f"w{i}" for i in range(31)] +
            ["sp", "pc", "lr", "fp", "nzcv", "cpsr", "fpsr", "fpcr", "tpidr_el0"] + [f"v{i}" for i in range(32)])


def main_registers(cpu: Any) -> list[str]:
    """The registers `info regs` shows by default, in order."""
    if _arch(cpu) == "riscv64":
        return [f"x{i}" for i in range(1, 32)] + ["pc"]
    return [f"x{i}" for i in range(31)] + ["sp", "pc", "cpsr"]


def display_name(cpu: Any, name: str) -> str:
    if _arch(cpu) == "riscv64" and name.startswith("x") and name[1:].isdigit():
        return f"{RV_ABI[int(name[1:])]} ({name})"
    return name


def _rv_index(name: str) -> int | None:
    if name == "fp":
        return 8
    if name in RV_ABI:
        return RV_ABI.index(name)
    if name.startswith("x") and name[1:].isdigit() and int(name[1:]) < 32:
        return int(name[1:])
    return None


def _arm_index(name: str) -> int | None:
    if name == "lr":
        return 30
    if name == "fp":
        return 29
    if name[:1] in ("x", "w") and name[1:].isdigit() and int(name[1:]) < 31:
        return int(name[1:])
    return None


def read_register(cpu: Any, name: str) -> int:
    n = name.lower().lstrip("$")
    if n == "pc":
        return cpu.get_pc()
    if _arch(cpu) == "riscv64":
        i = _rv_index(n)
        if i is not None:
            return cpu.reg(i)
        if n.startswith("f") and n[1:].isdigit() and int(n[1:]) < 32:
            return cpu.uc.reg_read(machine_regs.regid("riscv64", f"f{int(n[1:])}"))
        if n == "fcsr":
            return cpu.uc.reg_read(machine_regs.regid("riscv64", "fcsr"))
        rvv = getattr(cpu, "rvv", None)
        if rvv is not None and n.startswith("v") and n[1:].isdigit() and int(n[1:]) < 32:
            return int.from_bytes(rvv.read_vreg(int(n[1:])), "little")   # the whole VLEN-bit register
        if rvv is not None and n in RV_VECTOR_CSRS:
            if n == "vcsr":                  # vcsr mirrors vxrm in bits 2:1 and vxsat in bit 0
                return (rvv.vxrm & 3) << 1 | (rvv.vxsat & 1)
            return int(getattr(rvv, n))
        if n in RV_COUNTER_CSRS:
            return rv_counter(cpu, n)
        raise DebugError(f"no register {name!r} on riscv64", hint="e.g. a0, x10, sp, pc, f0, v8, vl")
    i = _arm_index(n)
    if i is not None:
        v = cpu.reg(i)
        return v & 0xFFFF_FFFF if n.startswith("w") else v
    if n == "sp":
        return cpu.sp
    if n in ("nzcv", "cpsr", "tpidr_el0"):
        return cpu.uc.reg_read(machine_regs.regid("arm64", n))
    if n in ("fpsr", "fpcr") or (n.startswith("v") and n[1:].isdigit() and int(n[1:]) < 32):
        fp = cpu.save_fp()          # through the CPU: runs any queued kernel FP/SVE stubs first
        return fp[n] if n in ("fpsr", "fpcr") else fp["v"][int(n[1:])]
    if n in SVE_NAMES and has_sve(cpu):
        if n == "vg":
            return cpu.vl // 64
        return int.from_bytes(read_sve_register(cpu, n, read_sve(cpu)), "little")
    raise DebugError(f"no register {name!r} on arm64", hint="e.g. x0, w1, sp, lr, pc, v0, z0, p0")


def write_register(cpu: Any, name: str, value: int) -> None:
    n = name.lower().lstrip("$")
    if n == "pc":
        cpu.set_pc(value & MASK64)
        return
    if _arch(cpu) == "riscv64":
        i = _rv_index(n)
        if i is not None:
            if i == 0:
                raise DebugError("x0 (zero) is hard-wired to 0")
            cpu.set_reg(i, value & MASK64)
            return
        if n.startswith("f") and n[1:].isdigit() and int(n[1:]) < 32:
            cpu.uc.reg_write(machine_regs.regid("riscv64", f"f{int(n[1:])}"), value & MASK64)
            return
        if n == "fcsr":
            cpu.uc.reg_write(machine_regs.regid("riscv64", "fcsr"), value & 0xFF)
            return
        rvv = getattr(cpu, "rvv", None)
        if rvv is not None and n.startswith("v") and n[1:].isdigit() and int(n[1:]) < 32:
            rvv.write_vreg(int(n[1:]), (value & ((1 << rvv.vlen) - 1)).to_bytes(rvv.vlenb, "little"))
            return
        if rvv is not None and n in RV_VECTOR_CSRS or n in RV_COUNTER_CSRS:
            raise DebugError(f"{n} is not writable from the debugger (vl/vtype are set by vset{{i}}vl{{i}}, "
                             "the counters by the clock)")
        raise DebugError(f"no register {name!r} on riscv64", hint="e.g. a0, x10, sp, pc, f0, v8")
    i = _arm_index(n)
    if i is not None:
        cpu.set_reg(i, value & (0xFFFF_FFFF if n.startswith("w") else MASK64))
        return
    if n == "sp":
        cpu.sp = value & MASK64
        return
    sync = getattr(cpu, "stub_sync", None)
    if callable(sync):
        sync()                      # queued kernel stubs must not overwrite what the user sets
    if n in ("nzcv", "cpsr", "fpsr", "fpcr", "tpidr_el0"):
        cpu.uc.reg_write(machine_regs.regid("arm64", n), value & MASK64)
        return
    if n.startswith("v") and n[1:].isdigit() and int(n[1:]) < 32:
        cpu.uc.reg_write(machine_regs.regid("arm64", f"q{int(n[1:])}"), value & ((1 << 128) - 1))
        return
    if n in SVE_NAMES and has_sve(cpu):
        if n == "vg":
            raise DebugError("vg is the task's vector length: change it with prctl(PR_SVE_SET_VL)")
        st = read_sve(cpu)
        size = len(read_sve_register(cpu, n, st))
        write_sve_register(cpu, n, (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little"), st)
        return
    raise DebugError(f"no register {name!r} on arm64", hint="e.g. x0, w1, sp, lr, pc, v0")


# ---- RISC-V user counters -------------------------------------------------------------------------
def rv_counter(cpu: Any, name: str) -> int:
    """cycle / time / instret as the guest's rdcycle / rdtime / rdinstret see them: the CPU's
    cycle clock, the timer (the clock at the timebase frequency) and retired instructions."""
    if name == "cycle":
        return int(cpu.now)
    if name == "time":
        return int(cpu.clock.timer_count(cpu.now))
    return int(cpu.insns)


# ---- arm64 SVE ----------------------------------------------------------------------------------------
def has_sve(cpu: Any) -> bool:
    return _arch(cpu) == "arm64" and bool(getattr(cpu, "has_sve", False))


def read_sve(cpu: Any) -> dict[str, Any]:
    """Z0-Z31, P0-P15, FFR (bytes at the current VL) through the kernel's sve_save_state."""
    from emukern.kernel.arch.arm64.entry_fpsimd import read_sve_state
    return read_sve_state(cpu)


def read_sve_register(cpu: Any, name: str, st: dict[str, Any]) -> bytes:
    if name == "ffr":
        return bytes(st["ffr"])
    return bytes(st["z" if name[0] == "z" else "p"][int(name[1:])])


def write_sve_register(cpu: Any, name: str, data: bytes, st: dict[str, Any] | None = None) -> None:
    """Replace one Z/P/FFR register (``data`` at the current VL) and load the state back."""
    st = dict(st if st is not None else read_sve(cpu))
    if name == "ffr":
        st["ffr"] = data
    else:
        key = "z" if name[0] == "z" else "p"
        regs = list(st[key])
        regs[int(name[1:])] = data
        st[key] = regs
    from emukern.kernel.arch.arm64.entry_fpsimd import write_sve_state
    write_sve_state(cpu, st)
