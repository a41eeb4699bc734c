"""The register file the SVE2 unit works on, and the shape of one instruction's entry.

A ``SveRegs`` is filled by the CPU from the live registers before an instruction runs and
written back after it: only what the instruction marks as written goes back.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, NoReturn

from emukern.errors import MemoryFault


def _no_memory(addr: int, *_: object) -> NoReturn:
    raise MemoryFault(addr, "r")


class Sve2Undefined(Exception):
    """The word is unallocated inside its encoding class: the CPU takes an UNDEF for it."""


@dataclass
class SveRegs:
    """Architectural SVE state for one instruction.

    ``vl`` is the vector length in bytes (16..256).  ``z[n]`` is Z<n> as ``vl`` little-endian
    bytes (element i of size esize bytes is ``z[n][i*esize:(i+1)*esize]``).  ``p[n]`` is P<n> as
    an int of ``vl`` bits, bit i governing byte i (an element of esize bytes is active when the
    bit of its lowest byte is set).  ``nzcv`` is PSTATE.{N,Z,C,V} in bits 3..0.
    """
    vl: int
    z: list[bytearray]
    p: list[int]
    ffr: int = 0
    fpcr: int = 0
    fpsr: int = 0
    nzcv: int = 0
    written_z: set[int] = field(default_factory=set)
    written_p: set[int] = field(default_factory=set)
    flags_written: bool = False      # nzcv changed
    fpsr_written: bool = False
    # (added by the SVE2 unit, backwards compatible) the general-purpose registers an instruction
    # may read (WHILE*): xreg(n) for n in 0..30, read lazily from the CPU
    xreg: Callable[[int], int] = field(default=lambda n: 0, repr=False)
    # (added for the SVE2 memory instructions) guest memory as the CPU's loads and stores see
    # it: read_mem(addr, n) -> bytes, write_mem(addr, data), and probe_write(addr, n), which
    # checks a store would succeed without storing (a scatter checks every element before it
    # writes any).  Each raises MemoryFault for a bad address; the unit delivers that as the
    # data abort the instruction would take.  Without a CPU behind it every access faults.
    read_mem: Callable[[int, int], bytes] = field(default=_no_memory, repr=False)
    write_mem: Callable[[int, bytes], None] = field(default=_no_memory, repr=False)
    probe_write: Callable[[int, int], None] = field(default=_no_memory, repr=False)
    sp_reg: Callable[[], int] = field(default=lambda: 0, repr=False)    # SP, for a base of 31

    @classmethod
    def zeroed(cls, vl: int) -> "SveRegs":
        return cls(vl, [bytearray(vl) for _ in range(32)], [0] * 16)

    def set_z(self, n: int, data: bytes | bytearray) -> None:
        assert len(data) == self.vl
        self.z[n] = bytearray(data)
        self.written_z.add(n)

    def set_p(self, n: int, value: int) -> None:
        self.p[n] = value & ((1 << self.vl) - 1)
        self.written_p.add(n)

    def set_nzcv(self, nzcv: int) -> None:
        self.nzcv = nzcv & 0xF
        self.flags_written = True

    def raise_fp_flags(self, flags: int) -> None:
        """OR cumulative exception bits (FPSR.IOC/DZC/OFC/UFC/IXC/IDC) into FPSR."""
        if flags & ~self.fpsr:
            self.fpsr |= flags
            self.fpsr_written = True


@dataclass(frozen=True)
class Sve2Insn:
    """One encoding class the unit executes: ``word & mask == value`` selects it, ``feature``
    names the ID_AA64ZFR0_EL1 / ID_AA64ISAR1_EL1 field that must advertise it (one of
    sve2, sveaes, svepmull128, svebitperm, svesha3, svesm4, svei8mm, svef32mm, svef64mm,
    svebf16), ``fn(word, regs)`` executes it (raising Sve2Undefined for unallocated fields)."""
    name: str
    mask: int
    value: int
    feature: str
    fn: Callable[[int, SveRegs], None]
