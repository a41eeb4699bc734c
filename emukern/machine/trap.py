"""The seam between hardware and kernel: one typed :class:`Trap` per user→kernel transition.

Unicorn does not write ESR_EL1 / scause when a hook catches an exception, so the CPU classes work
the syndrome out from the instruction word and the trap controls, as the hardware would have.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from dataclasses import dataclass
from enum import Enum


class TrapKind(str, Enum):
    SYSCALL = "syscall"          # ecall from U / svc from EL0
    ILLEGAL = "illegal"          # illegal (RISC-V) / undefined (arm64 EC 0x0) instruction
    SYSREG = "sysreg"            # arm64 EC 0x18: trapped MSR/MRS/SYS (FEAT_IDST ID-register reads)
    SVE_ACCESS = "sve-access"    # arm64 EC 0x19: SVE instruction while CPACR_EL1.ZEN traps EL0
    BREAKPOINT = "breakpoint"    # ebreak / brk
    MEM_FAULT = "mem-fault"      # load/store/fetch to unmapped or protected memory
    TIMER = "timer"              # the per-CPU tick interrupt (taken between two instructions)


# arm64 exception classes (ESR_ELx.EC) used by emukern
ESR_EC_UNKNOWN = 0x00
ESR_EC_SVC64 = 0x15
ESR_EC_SYS64 = 0x18
ESR_EC_SVE = 0x19
ESR_EC_IABT_LOW = 0x20
ESR_EC_DABT_LOW = 0x24
ESR_EC_SOFTSTP_LOW = 0x32         # software step completed at EL0
ESR_EC_BRK64 = 0x3C

# RISC-V scause values
CAUSE_ILLEGAL = 2
CAUSE_BREAKPOINT = 3
CAUSE_USER_ECALL = 8
CAUSE_FETCH_PAGE_FAULT = 12
CAUSE_LOAD_PAGE_FAULT = 13
CAUSE_STORE_PAGE_FAULT = 15
CAUSE_SUPERVISOR_TIMER = (1 << 63) | 5


def note_text(note: Any) -> str:
    """A trap's note as text.  A note is text, or a tuple (function, values...) whose text is
    ``function(*values)``, made only when the note is read: the kernel's notes on every signal
    delivery and sigreturn are kept that way, the formatting left to whoever reads the log."""
    return note if type(note) is str else note[0](*note[1:])


@dataclass(slots=True)
class Trap:
    kind: TrapKind
    arch: str
    pc: int                       # address of the trapping instruction (epc / ELR)
    cpu: int = 0
    insn: int | None = None       # the instruction word, when there is one
    insn_size: int = 4
    # RISC-V syndrome
    cause: int | None = None      # scause
    tval: int | None = None       # stval (faulting address or instruction word)
    # arm64 syndrome
    esr: int | None = None
    # memory faults
    addr: int | None = None
    access: str | None = None     # "r", "w", "x"
    detail: str = ""              # e.g. why the hardware refused the instruction
    # filled by the kernel as it handles the trap (for the trace / debugger)
    handler: str = ""
    decision: str = ""
    cycles: int = 0
    ret: int | None = None        # a syscall's return value
    notes: list[Any] | None = None  # what entry/exit work decided (vstate discard, SVE flush, ...): note_text
    sysregs: list[int] | None = None  # syscall number and arguments, when the CPU read them already
    extra: dict | None = None

    @property
    def ec(self) -> int | None:
        return None if self.esr is None else (self.esr >> 26) & 0x3F

    @property
    def iss(self) -> int | None:
        return None if self.esr is None else self.esr & 0x1FFFFFF

    def describe(self, errno_names: "Mapping[int, str] | None" = None) -> str:
        """The handler's decision, a syscall's return value (an error by its name in
        ``errno_names``: the kernel's table, the machine has none), and the entry/exit notes."""
        d = self.decision
        if not d and self.ret is not None:
            r = self.ret
            if r >= 0 or r < -4095:
                d = f"returned {r}"
            else:
                d = f"returned -{(errno_names or {}).get(-r, -r)}"
        if self.notes:
            notes = [note_text(n) for n in self.notes]
            return "; ".join([d, *notes] if d else notes)
        return d

    def syndrome(self) -> str:
        if self.arch == "arm64":
            if self.esr is None:
                return "-"
            return f"ESR={self.esr:#x} (EC={self.ec:#04x} ISS={self.iss:#x})"
        parts = [f"scause={self.cause:#x}" if self.cause is not None else "scause=-"]
        if self.tval is not None:
            parts.append(f"stval={self.tval:#x}")
        return " ".join(parts)
