"""FEAT_LSE atomics as a CPU without FEAT_LSE2 executes them: a misaligned one takes an alignment fault.

The ``max`` CPU emukern models has FEAT_LSE (ID_AA64ISAR0_EL1.Atomic = 2) but not FEAT_LSE2
(ID_AA64MMFR2_EL1.AT = 0, so no HWCAP_USCAT).  Without LSE2 the architecture requires every
LD<op>/ST<op>/SWP/CAS/CASP and the RCpc LDAPR to be naturally aligned (CASP: to the pair's size);
a misaligned one is a Data Abort with DFSC 0b100001 (alignment fault) whatever SCTLR_EL1.A says.
Unicorn 2.1.4 (QEMU 5.0's translator) performs them at any address without a fault, so these
words are scan-on-execute exits (machine/cpu_base.py): when one is reached the machine checks the
address and either raises the alignment fault (a MEM_FAULT trap, FAR = the address, ESR =
DABT from EL0 with that DFSC) or performs the access itself — a read-modify-write of guest memory
that no other CPU can interleave with (emukern's CPUs run one at a time), then retires the
instruction.  A fault on the access itself (unmapped, read-only) is the ordinary data abort.

Not covered (Unicorn still completes them misaligned): the exclusives (LDXR/STXR and pairs) and
LDAR/STLR, which Linux-on-hardware would also see fault without LSE2.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from emukern.errors import MemoryFault

DFSC_ALIGNMENT = 0x21
ESR_EC_DABT_LOW = 0x24
ESR_IL = 1 << 25
ESR_WNR = 1 << 6



class WordFilter:
    """Finds the aligned 32-bit words of a code page whose bytes 1-3 match the fixed bits of one
    of a few encoding classes, without a Python step per word: each of those bytes is mapped
    (``bytes.translate`` of a stride of the page) to the set of classes it fits, as bits, and
    the three strides are ANDed as big integers; the words left non-zero are the candidates,
    which the caller then decodes exactly.  (A filter on the top byte alone let every 32/64-bit
    LDR/STR through to a Python decode: ~1 word in 40 of libc.)"""

    _NONZERO = re.compile(rb"[^\x00]")

    def __init__(self, classes: "list[tuple[int, int]]") -> None:
        """``classes``: (mask, value) of each class's fixed bits, at most eight."""
        assert len(classes) <= 8
        self._tables = [bytes(sum(1 << c for c, (mask, value) in enumerate(classes)
                                  if b & (mask >> 8 * k) & 0xFF == (value >> 8 * k) & 0xFF)
                              for b in range(256))
                        for k in (1, 2, 3)]

    def offsets(self, data: bytes) -> list[int]:
        """Byte offsets of the candidate words among the aligned words of ``data``."""
        n = len(data) // 4
        t1, t2, t3 = self._tables
        both = (int.from_bytes(data[1::4][:n].translate(t1), "little")
                & int.from_bytes(data[2::4][:n].translate(t2), "little")
                & int.from_bytes(data[3::4][:n].translate(t3), "little"))
        if not both:
            return []
        return [4 * m.start() for m in self._NONZERO.finditer(both.to_bytes(n, "little"))]


# the fixed bits of the words decode_atomic accepts: atomic memory ops, CAS, CASP
_CANDIDATES = WordFilter([(0x3F20_0C00, 0x3820_0000), (0x3FA0_7C00, 0x08A0_7C00), (0xBFA0_7C00, 0x0820_7C00)])

_LD_OPS = ("add", "clr", "eor", "set", "smax", "smin", "umax", "umin")


@dataclass(frozen=True)
class Atomic:
    op: str          # add clr eor set smax smin umax umin | swp | ldapr | cas | casp
    size: int        # bytes per element
    rs: int
    rn: int
    rt: int

    @property
    def align(self) -> int:
        return 2 * self.size if self.op == "casp" else self.size

    @property
    def writes(self) -> bool:
        return self.op != "ldapr"


def decode_atomic(word: int) -> Atomic | None:
    """The LSE atomic (or LDAPR) ``word`` encodes, or None."""
    rs, rn, rt = (word >> 16) & 31, (word >> 5) & 31, word & 31
    if word & 0x3F20_0C00 == 0x3820_0000:                  # atomic memory operations
        size = 1 << (word >> 30)
        o3, opc = (word >> 15) & 1, (word >> 12) & 7
        if o3 == 0:
            return Atomic(_LD_OPS[opc], size, rs, rn, rt)
        if opc == 0:
            return Atomic("swp", size, rs, rn, rt)
        if opc == 4 and (word >> 22) & 3 == 2 and rs == 31:   # A=1 R=0: LDAPR
            return Atomic("ldapr", size, rs, rn, rt)
        return None
    if word & 0x3FA0_7C00 == 0x08A0_7C00:                  # CAS, CASA, CASL, CASAL (all sizes)
        return Atomic("cas", 1 << (word >> 30), rs, rn, rt)
    if word & 0xBFA0_7C00 == 0x0820_7C00 and rs % 2 == 0 and rt % 2 == 0:   # CASP (even pairs)
        return Atomic("casp", 8 if word >> 30 & 1 else 4, rs, rn, rt)
    return None


def find_atomic_words(data: bytes, base: int, found: dict[int, "Atomic"] | None = None) -> list[int]:
    """Addresses of the LSE atomics among the aligned words of ``data`` (a page at ``base``);
    ``found`` (when given) gets address -> decoded instruction for each."""
    out = []
    for i in _CANDIDATES.offsets(data):
        a = decode_atomic(int.from_bytes(data[i:i + 4], "little"))
        if a is not None:
            out.append(base + i)
            if found is not None:
                found[base + i] = a
    return out


def unicorn_performs_right(a: Atomic) -> bool:
    """Whether Unicorn 2.1.4's own execution of ``a`` (when aligned) gives the architectural
    result.  Its LDSMAX/LDSMIN (and STSMAX/STSMIN) compare the operands of a byte, halfword or
    word unsigned, as a 64-bit compare of zero-extended values: 0x80 vs 0x7f picks 0x80 for
    the maximum (guest_asm/c/lse_atomics.c against qemu-aarch64 7.2 shows it).  Those stay
    performed here; every other atomic Unicorn may run itself."""
    return a.op not in ("smax", "smin")


def alignment_esr(a: Atomic) -> int:
    """ESR_EL1 of the alignment fault: a data abort from EL0, WnR for the writing forms."""
    return (ESR_EC_DABT_LOW << 26) | ESR_IL | (ESR_WNR if a.writes else 0) | DFSC_ALIGNMENT


def _sx(v: int, bits: int) -> int:
    return v - (1 << bits) if v >> (bits - 1) & 1 else v


def _combine(op: str, old: int, operand: int, bits: int) -> int:
    mask = (1 << bits) - 1
    if op == "add":
        return (old + operand) & mask
    if op == "clr":
        return old & ~operand & mask
    if op == "eor":
        return old ^ operand
    if op == "set":
        return old | operand
    if op in ("smax", "smin"):
        a, b = _sx(old, bits), _sx(operand, bits)
        return (max(a, b) if op == "smax" else min(a, b)) & mask
    if op == "umax":
        return max(old, operand)
    if op == "umin":
        return min(old, operand)
    return operand                                           # swp


class _Cell:
    """The aligned bytes an atomic accesses, found with one mapping lookup (an aligned access of
    at most 16 bytes never crosses a page).  A missing mapping or permission raises MemoryFault
    through AddressSpace.read/write, before anything is written."""

    def __init__(self, mm, addr: int, n: int, write: bool) -> None:
        m = mm.find(addr)
        if m is None or "r" not in m.perms or (write and "w" not in m.perms):
            mm.read(addr, n)                                 # raises the read fault
            mm.write(addr, mm.read(addr, n))                 # raises the write fault
            raise AssertionError("unreachable")             # pragma: no cover
        self.mm, self.m, self.off, self.n = mm, m, m.offset + addr - m.start, n

    def get(self) -> bytes:
        return self.m.buf[self.off:self.off + self.n]

    def put(self, data: bytes) -> None:
        self.m.buf[self.off:self.off + self.n] = data
        if "x" in self.m.perms:
            self.mm.code_gen += 1            # as AddressSpace.write: CPUs rescan that code


def perform(a: Atomic, mm, addr: int, reg, set_reg) -> None:
    """Do the aligned access on ``mm`` and write the result registers (``reg(i)`` reads Xi with
    31 = XZR; ``set_reg(i, v)`` ignores 31).  MemoryFault propagates (nothing written then)."""
    bits = 8 * a.size
    mask = (1 << bits) - 1
    if a.op == "ldapr":
        set_reg(a.rt, int.from_bytes(_Cell(mm, addr, a.size, False).get(), "little"))
        return
    if a.op == "casp":
        cell = _Cell(mm, addr, 2 * a.size, True)
        raw = cell.get()
        lo, hi = int.from_bytes(raw[:a.size], "little"), int.from_bytes(raw[a.size:], "little")
        if (lo, hi) == (reg(a.rs) & mask, reg(a.rs + 1) & mask):
            cell.put((reg(a.rt) & mask).to_bytes(a.size, "little") + (reg(a.rt + 1) & mask).to_bytes(a.size, "little"))
        set_reg(a.rs, lo)
        set_reg(a.rs + 1, hi)
        return
    cell = _Cell(mm, addr, a.size, True)          # CAS needs write permission even when it fails
    old = int.from_bytes(cell.get(), "little")
    if a.op == "cas":
        if old == reg(a.rs) & mask:
            cell.put((reg(a.rt) & mask).to_bytes(a.size, "little"))
        set_reg(a.rs, old)
        return
    cell.put(_combine(a.op, old, reg(a.rs) & mask, bits).to_bytes(a.size, "little"))
    set_reg(a.rt, old)


__all__ = ["Atomic", "WordFilter", "decode_atomic", "find_atomic_words", "alignment_esr", "perform", "MemoryFault",
           "DFSC_ALIGNMENT", "unicorn_performs_right"]
