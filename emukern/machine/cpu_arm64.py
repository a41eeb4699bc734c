"""An AArch64 ``max`` CPU running at EL0 in Unicorn.

Measured Unicorn behaviour this relies on (tests/machine/test_cpu_arm64.py checks each):
* Writing PSTATE does not change the exception level; EL0 is reached with a real ``eret`` from
  EL1 (SPSR_EL1 = 0, ELR_EL1 = entry), executed from a small machine-owned stub page.
* SVE needs the ``max`` model, CPTR_EL3.EZ and CPACR_EL1.ZEN; VL = min over ZCR_EL1/2/3 LEN.
* At EL0, with the hooks installed: ``svc`` is intno 2 with the PC already past it; an undefined
  instruction — including an SVE instruction while ZEN traps EL0 and an ``mrs`` of an ID register
  (no FEAT_IDST in QEMU 5.0) — is intno 1 with the PC at the instruction; ``brk`` is intno 7.
* ESR_EL1 is not written when a hook catches the exception, so the syndrome (EC/ISS) is worked
  out here from the instruction word and the trap controls, as the hardware would.
* ``UC_HOOK_INSN``/MRS fires before an MRS executes; returning True skips it.  emukern uses that
  for CNTVCT_EL0/CNTFRQ_EL0 so a guest timing itself reads emukern's clock.
"""
from __future__ import annotations

from typing import Any

from unicorn import (UC_ARCH_ARM64, UC_HOOK_INSN, UC_HOOK_INTR, UC_MODE_ARM, UC_PROT_ALL, Uc,
                     UcError)
from unicorn import arm64_const as A

from emukern.machine.clock import Clock
from emukern.machine.cpu_base import Cpu
from emukern.machine.trap import (ESR_EC_BRK64, ESR_EC_DABT_LOW, ESR_EC_IABT_LOW, ESR_EC_SVC64,
                                  ESR_EC_SVE, ESR_EC_SYS64, ESR_EC_UNKNOWN, Trap, TrapKind)

STUB_BASE = 0x3F_FFFF_0000      # machine-owned page: the eret that enters EL0, kernel stubs
STUB_SIZE = 0x10000
ESR_IL = 1 << 25

_X = [A.UC_ARM64_REG_X0 + i for i in range(29)] + [A.UC_ARM64_REG_X29, A.UC_ARM64_REG_X30]
_Q = [A.UC_ARM64_REG_Q0 + i for i in range(32)]

# system registers as (op0, op1, crn, crm, op2)
CPACR_EL1 = (3, 0, 1, 0, 2)
CPTR_EL3 = (3, 6, 1, 1, 2)
ZCR_EL1 = (3, 0, 1, 2, 0)
ZCR_EL2 = (3, 4, 1, 2, 0)
ZCR_EL3 = (3, 6, 1, 2, 0)
CNTKCTL_EL1 = (3, 0, 14, 1, 0)
SPSR_EL1 = (3, 0, 4, 0, 0)
ELR_EL1 = (3, 0, 4, 0, 1)
CNTVCT_EL0 = (3, 3, 14, 0, 2)
CNTFRQ_EL0 = (3, 3, 14, 0, 0)
CNTPCT_EL0 = (3, 3, 14, 0, 1)

CPACR_FPEN_ALL = 3 << 20
CPACR_ZEN_EL1 = 1 << 16      # ZEN=01: SVE usable at EL1, trapped at EL0
CPACR_ZEN_ALL = 3 << 16      # ZEN=11: SVE usable at EL0 too

SVE_VL_MIN, SVE_VL_MAX = 128, 2048


def is_sve_encoding(word: int) -> bool:
    """True for the SVE encoding space (op0 = 0b0010 in bits 28:25)."""
    return (word >> 25) & 0xF == 0b0010


def decode_sysreg_insn(word: int) -> tuple[int, int, int, int, int, int, bool] | None:
    """(op0, op1, crn, crm, op2, rt, is_read) for MRS/MSR (register), else None."""
    if word & 0xFFD00000 != 0xD5100000:       # 1101 0101 00 L 1 op0[1] ...
        return None
    is_read = bool(word & (1 << 21))
    op0 = 2 + ((word >> 19) & 1)
    op1 = (word >> 16) & 7
    crn = (word >> 12) & 0xF
    crm = (word >> 8) & 0xF
    op2 = (word >> 5) & 7
    rt = word & 0x1F
    return op0, op1, crn, crm, op2, rt, is_read


def sysreg_iss(op0: int, op1: int, crn: int, crm: int, op2: int, rt: int, is_read: bool) -> int:
    """ISS of an EC 0x18 trap (ARM ARM D17.2.37)."""
    return (op0 << 20) | (op2 << 17) | (op1 << 14) | (crn << 10) | (rt << 5) | (crm << 1) | int(is_read)


class Arm64Cpu(Cpu):
    arch = "arm64"

    def __init__(self, index: int, clock: Clock, *, sve_vl: int = 256, idst: bool = False,
                 sve: bool = True) -> None:
        uc = Uc(UC_ARCH_ARM64, UC_MODE_ARM)
        uc.ctl_set_cpu_model(A.UC_CPU_ARM64_MAX)
        super().__init__(index, clock, uc)
        self.idst = idst                   # FEAT_IDST: EL0 ID-register reads trap as EC 0x18
        self.has_sve = sve
        uc.mem_map(STUB_BASE, STUB_SIZE, UC_PROT_ALL)
        uc.mem_write(STUB_BASE, (0xD69F03E0).to_bytes(4, "little"))      # eret
        self.cpr_write(CPTR_EL3, self.cpr_read(CPTR_EL3) | (1 << 8))     # EZ: SVE not trapped to EL3
        self.cpr_write(ZCR_EL2, 0xF)
        self.cpr_write(ZCR_EL3, 0xF)
        self.cpr_write(CNTKCTL_EL1, 0)       # EL0 counter reads go through the MRS hook
        self.sve_el0 = False
        self._write_cpacr()
        self.vl = 0
        self._at_el0 = False
        self.set_vl(sve_vl)
        uc.hook_add(UC_HOOK_INTR, self._hook_intr)
        uc.hook_add(UC_HOOK_INSN, self._hook_mrs, None, 1, 0, A.UC_ARM64_INS_MRS)
        self._syscall_batch = self.make_batch([_X[8]] + _X[0:6])

    # ---- system registers ----------------------------------------------------------------------
    def cpr_read(self, enc: tuple[int, int, int, int, int]) -> int:
        op0, op1, crn, crm, op2 = enc
        return self.uc.reg_read(A.UC_ARM64_REG_CP_REG, (crn, crm, op0, op1, op2))

    def cpr_write(self, enc: tuple[int, int, int, int, int], value: int) -> None:
        op0, op1, crn, crm, op2 = enc
        self.uc.reg_write(A.UC_ARM64_REG_CP_REG, (crn, crm, op0, op1, op2, value))

    def _write_cpacr(self) -> None:
        zen = CPACR_ZEN_ALL if self.sve_el0 else CPACR_ZEN_EL1
        self.cpr_write(CPACR_EL1, CPACR_FPEN_ALL | zen)

    def set_sve_el0(self, enabled: bool) -> None:
        """CPACR_EL1.ZEN: let EL0 execute SVE (11) or trap it (01)."""
        if enabled != self.sve_el0:
            self.sve_el0 = enabled
            self._write_cpacr()

    def set_vl(self, vl_bits: int) -> None:
        """Program ZCR_EL1.LEN for a vector length in bits (a multiple of 128)."""
        if vl_bits % 128 or not SVE_VL_MIN <= vl_bits <= SVE_VL_MAX:
            raise ValueError(f"SVE vector length {vl_bits} is not a multiple of 128 in 128..2048")
        self.cpr_write(ZCR_EL1, vl_bits // 128 - 1)
        self.vl = vl_bits

    # ---- registers -----------------------------------------------------------------------------
    def get_pc(self) -> int:
        return self._read(A.UC_ARM64_REG_PC)

    def set_pc(self, pc: int) -> None:
        self._write(A.UC_ARM64_REG_PC, pc)

    def reg(self, i: int) -> int:
        if i == 31:
            return 0            # XZR in the register-number sense used by syndromes
        return self._read(_X[i])

    def set_reg(self, i: int, value: int) -> None:
        if i != 31:
            self._write(_X[i], value)

    def syscall_regs(self) -> list[int]:
        """[x8, x0..x5] in one call: the syscall number and its six arguments."""
        return self._syscall_batch()

    @property
    def sp(self) -> int:
        """The user stack pointer: SP_EL0 (the live SP once the CPU runs at EL0)."""
        return self.uc.reg_read(A.UC_ARM64_REG_SP if self._at_el0 else A.UC_ARM64_REG_SP_EL0)

    @sp.setter
    def sp(self, v: int) -> None:
        self.uc.reg_write(A.UC_ARM64_REG_SP if self._at_el0 else A.UC_ARM64_REG_SP_EL0, v)

    def reg_by_name(self, name: str) -> int:
        n = name.lower()
        if n == "sp":
            return self.sp
        if n in ("lr", "x30"):
            return self.reg(30)
        if n in ("fp", "x29"):
            return self.reg(29)
        return self.reg(int(n.lstrip("xw")))

    def save_context(self) -> dict[str, Any]:
        return {"x": [self.uc.reg_read(r) for r in _X], "sp": self.sp, "pc": self.get_pc(),
                "nzcv": self.uc.reg_read(A.UC_ARM64_REG_NZCV),
                "tpidr": self.uc.reg_read(A.UC_ARM64_REG_TPIDR_EL0)}

    def load_context(self, ctx: dict[str, Any]) -> None:
        for r, v in zip(_X, ctx["x"]):
            self.uc.reg_write(r, v)
        self.sp = ctx["sp"]
        self.set_pc(ctx["pc"])
        self.uc.reg_write(A.UC_ARM64_REG_NZCV, ctx["nzcv"])
        self.uc.reg_write(A.UC_ARM64_REG_TPIDR_EL0, ctx["tpidr"])

    def save_fp(self) -> dict[str, Any]:
        """FPSIMD state: V0-V31 (the low 128 bits of Z), FPSR, FPCR."""
        return {"v": [self.uc.reg_read(r) for r in _Q], "fpsr": self.uc.reg_read(A.UC_ARM64_REG_FPSR),
                "fpcr": self.uc.reg_read(A.UC_ARM64_REG_FPCR)}

    def load_fp(self, st: dict[str, Any]) -> None:
        for r, v in zip(_Q, st["v"]):
            self.uc.reg_write(r, v)
        self.uc.reg_write(A.UC_ARM64_REG_FPSR, st["fpsr"])
        self.uc.reg_write(A.UC_ARM64_REG_FPCR, st["fpcr"])

    def reset_fp(self) -> None:
        self.load_fp({"v": [0] * 32, "fpsr": 0, "fpcr": 0})

    # ---- entering EL0 --------------------------------------------------------------------------
    def enter_el0(self) -> None:
        """Drop from EL1 to EL0 with a real eret (once per CPU; hooks never change the EL)."""
        if self._at_el0:
            return
        pc = self.get_pc()
        self.cpr_write(SPSR_EL1, 0)          # EL0t, interrupts unmasked
        self.cpr_write(ELR_EL1, pc)
        before = self.counter.count
        self.counter.deadline = 2**63
        self.uc.emu_start(STUB_BASE, pc, count=1)
        self.stub_insns += self.counter.count - before
        self._at_el0 = True

    def run(self, until: int) -> None:
        if not self._at_el0:
            self.enter_el0()
        super().run(until)

    # ---- traps ---------------------------------------------------------------------------------
    def _hook_mrs(self, uc: Uc, reg: int, cp_reg: Any, _ud: Any) -> bool:
        enc = (cp_reg.op0, cp_reg.op1, cp_reg.crn, cp_reg.crm, cp_reg.op2)
        if enc == CNTVCT_EL0 or enc == CNTPCT_EL0:
            uc.reg_write(reg, self.clock.timer_count(self.now))
            return True
        if enc == CNTFRQ_EL0:
            uc.reg_write(reg, self.clock.timer_freq)
            return True
        return False

    def _word(self, pc: int) -> int | None:
        try:
            assert self.mm is not None
            return self.mm.fetch_insn(pc)
        except Exception:
            return None

    def classify_undef(self, pc: int, word: int) -> Trap:
        """Work out the syndrome an EL0 undefined-instruction exception would have had."""
        if is_sve_encoding(word) and self.has_sve and not self.sve_el0:
            return Trap(TrapKind.SVE_ACCESS, self.arch, pc, cpu=self.index, insn=word,
                        esr=(ESR_EC_SVE << 26) | ESR_IL)
        sysreg = decode_sysreg_insn(word)
        if sysreg is not None and self.idst:
            op0, op1, crn, crm, op2, rt, is_read = sysreg
            # FEAT_IDST: EL0 reads of the ID space report EC 0x18 instead of UNDEFINED
            if is_read and op0 == 3 and op1 == 0 and crn == 0:
                return Trap(TrapKind.SYSREG, self.arch, pc, cpu=self.index, insn=word,
                            esr=(ESR_EC_SYS64 << 26) | ESR_IL | sysreg_iss(*sysreg))
        return Trap(TrapKind.ILLEGAL, self.arch, pc, cpu=self.index, insn=word,
                    esr=(ESR_EC_UNKNOWN << 26) | ESR_IL)

    def _hook_intr(self, uc: Uc, intno: int, _ud: Any) -> None:
        pc = self.get_pc()
        if intno == 2:      # EXCP_SWI: svc, PC already past it
            epc = pc - 4
            word = self._word(epc) or 0
            self._deliver(Trap(TrapKind.SYSCALL, self.arch, epc, cpu=self.index, insn=word,
                               esr=(ESR_EC_SVC64 << 26) | ESR_IL | ((word >> 5) & 0xFFFF)))
            return
        word = self._word(pc)
        if word is None:
            self._deliver(Trap(TrapKind.MEM_FAULT, self.arch, pc, cpu=self.index, addr=pc, access="x",
                               esr=(ESR_EC_IABT_LOW << 26) | ESR_IL))
            return
        if intno == 1:      # EXCP_UDEF
            self._deliver(self.classify_undef(pc, word))
            return
        if intno == 7:      # EXCP_BKPT: brk #imm
            self._deliver(Trap(TrapKind.BREAKPOINT, self.arch, pc, cpu=self.index, insn=word,
                               esr=(ESR_EC_BRK64 << 26) | ESR_IL | ((word >> 5) & 0xFFFF)))
            return
        self._deliver(Trap(TrapKind.ILLEGAL, self.arch, pc, cpu=self.index, insn=word,
                           esr=(ESR_EC_UNKNOWN << 26) | ESR_IL, detail=f"unexpected exception {intno}"))

    def _trap_from_error(self, exc: UcError) -> Trap:
        pc = self.get_pc()
        if self._fault is not None:
            addr, access = self._fault
            ec = ESR_EC_IABT_LOW if access == "x" else ESR_EC_DABT_LOW
            wnr = (1 << 6) if access == "w" else 0
            return Trap(TrapKind.MEM_FAULT, self.arch, pc, cpu=self.index, addr=addr, access=access,
                        esr=(ec << 26) | ESR_IL | wnr, insn=self._word(pc))
        word = self._word(pc)
        return Trap(TrapKind.ILLEGAL, self.arch, pc, cpu=self.index, insn=word,
                    esr=(ESR_EC_UNKNOWN << 26) | ESR_IL, detail=str(exc))
