"""Register transfer for the SVE2 unit: the machine's own microcode that moves Z/P/FFR between
the CPU and Python.

Unicorn 2.1.4 exposes only V0-V31 (the low 128 bits of Z) through its register API; Z above
128 bits, P0-P15 and FFR can only be reached by SVE instructions the CPU executes.  So the
machine keeps a few fixed sequences of ``str``/``ldr`` (vector and predicate, ``mul vl``
addressing) in its execute-only stub page at :data:`MICROCODE` -- machine microcode, not
kernel text -- and runs the part it needs with a nested ``emu_start`` from inside the UNDEF
hook:

* ``SAVE``: ``str z0..z31, [x0, #n, mul vl]`` then ``str p0..p15, [x1, #n, mul vl]``; the unit
  runs the contiguous slice that covers the registers the instruction reads (FFR: ``rdffr p0``
  after the P stores, then p0 reloaded);
* ``LOAD``: ``ldr z<n>`` / ``ldr p<n>`` one word each, run for the registers the instruction
  wrote.

The data goes through a machine-owned transfer page (:data:`XFER_BASE`) that is no-access
outside a transfer (``mem_protect`` around it, like the kernel stubs' bounce buffer) and the code
page is guarded against user execution by the CPU's CodeGuard (opened only while microcode
runs), so EL0 can neither jump into the microcode nor see another task's registers through the
page.  Every microcode instruction the counter sees is taken back out of the count: the guest
sees exactly one retired instruction.  The sequences run at the VL in ZCR_EL1 (the guest's; the
``mul vl`` offsets scale with it), with CPACR_EL1.ZEN as the guest has it (on: the unit only
runs when EL0 may use SVE).
"""
from __future__ import annotations

import ctypes
import mmap
from typing import Any, Callable

from unicorn import UC_PROT_NONE, UC_PROT_READ, UC_PROT_WRITE, Uc
from unicorn import arm64_const as A

MICROCODE = 0x3F_FFFF_8000      # inside the CPU's execute-only stub page (cpu_arm64.STUB_BASE)
XFER_BASE = 0x40_0000_4000      # the transfer page, after the kernel stubs' bounce buffer
Z_AREA = 0                      # 32 x VL bytes (VL <= 256 bytes)
P_AREA = 32 * 256               # 17 x VL/8 bytes: P0-P15, then FFR
XFER_SIZE = 0x3000

_SAVE_Z = 0                     # word index of str z0 in the microcode
_SAVE_P = 32                    # str p0
_SAVE_FFR = 48                  # rdffr p0.b; str p0, [x1, #16, mul vl]; ldr p0, [x1]
_LOAD_Z = 64                    # ldr z0
_LOAD_P = 96                    # ldr p0


def _imm9_mul_vl(imm: int) -> int:
    imm &= 0x1FF
    return ((imm >> 3) << 16) | ((imm & 7) << 10)


def str_z(zt: int, rn: int, imm: int) -> int:
    return 0xE5804000 | _imm9_mul_vl(imm) | (rn << 5) | zt


def ldr_z(zt: int, rn: int, imm: int) -> int:
    return 0x85804000 | _imm9_mul_vl(imm) | (rn << 5) | zt


def str_p(pt: int, rn: int, imm: int) -> int:
    return 0xE5800000 | _imm9_mul_vl(imm) | (rn << 5) | pt


def ldr_p(pt: int, rn: int, imm: int) -> int:
    return 0x85800000 | _imm9_mul_vl(imm) | (rn << 5) | pt


RDFFR_P0 = 0x2519F000
BRK_END = 0xD4200000 | (0xE4F << 5)      # never reached: a run stops at its ``until``


def microcode_words() -> list[int]:
    """The microcode, word by word (see the module docstring for the layout)."""
    w = [BRK_END] * 128
    for n in range(32):
        w[_SAVE_Z + n] = str_z(n, 0, n)
        w[_LOAD_Z + n] = ldr_z(n, 0, n)
    for n in range(16):
        w[_SAVE_P + n] = str_p(n, 1, n)
        w[_LOAD_P + n] = ldr_p(n, 1, n)
    w[_SAVE_FFR:_SAVE_FFR + 3] = [RDFFR_P0, str_p(0, 1, 16), ldr_p(0, 1, 0)]
    return w


MICROCODE_BYTES = b"".join(x.to_bytes(4, "little") for x in microcode_words())


class MicrocodeOverrun(RuntimeError):
    """A transfer sequence did not end where it must: an emulator bug, never a guest event."""


class SveTransfer:
    """Runs the microcode on one CPU.  ``run_range(first, last)`` executes microcode words
    first..last (inclusive) with the guest's counter untouched; the CPU supplies how to open its
    code guard (``guard``: a setter taking True/False) and its counter."""

    def __init__(self, uc: Uc, counter: Any, set_guard: Callable[[bool], None]) -> None:
        self.uc = uc
        self.counter = counter
        self._set_guard = set_guard
        self._buf = mmap.mmap(-1, XFER_SIZE)
        uc.mem_map_ptr(XFER_BASE, XFER_SIZE, UC_PROT_NONE,
                       ctypes.addressof(ctypes.c_char.from_buffer(self._buf)))
        self.runs = 0               # microcode runs (for the cost figures)
        self.words = 0              # microcode instructions executed

    @property
    def buf(self) -> mmap.mmap:
        return self._buf

    def open(self) -> dict[int, int]:
        """Open the transfer page and the guard; returns x0/x1 as the guest had them."""
        saved = {0: self.uc.reg_read(A.UC_ARM64_REG_X0), 1: self.uc.reg_read(A.UC_ARM64_REG_X1)}
        self.uc.mem_protect(XFER_BASE, XFER_SIZE, UC_PROT_READ | UC_PROT_WRITE)
        self._set_guard(True)
        self.uc.reg_write(A.UC_ARM64_REG_X0, XFER_BASE + Z_AREA)
        self.uc.reg_write(A.UC_ARM64_REG_X1, XFER_BASE + P_AREA)
        return saved

    def close(self, saved: dict[int, int], pc: int) -> None:
        """Back to the guest: x0/x1 and the PC restored, the page shut (which also drops the TLB
        entries the microcode's fetches filled) and zeroed, the guard closed."""
        self.uc.reg_write(A.UC_ARM64_REG_X0, saved[0])
        self.uc.reg_write(A.UC_ARM64_REG_X1, saved[1])
        self.uc.reg_write(A.UC_ARM64_REG_PC, pc)
        self._set_guard(False)
        self.uc.mem_protect(XFER_BASE, XFER_SIZE, UC_PROT_NONE)
        self._buf[:] = bytes(XFER_SIZE)     # no register contents left behind for the next task

    def run_range(self, first: int, last: int) -> None:
        n = last - first + 1
        c = self.counter
        before, deadline = c.count, c.deadline
        begin = MICROCODE + 4 * first
        end = begin + 4 * n
        c.deadline = before + n        # bounded: never more than the slice
        try:
            self.uc.emu_start(begin, end)
            ran = c.count - before
            pc = self.uc.reg_read(A.UC_ARM64_REG_PC)
        finally:
            c.count = before           # microcode is not a guest instruction
            c.deadline = deadline
        self.runs += 1
        self.words += ran
        if pc != end or ran != n:
            raise MicrocodeOverrun(f"SVE2 unit microcode words {first}..{last} stopped at {pc:#x} "
                                   f"after {ran} instructions: emulator error")

    # ---- the slices ------------------------------------------------------------------------------
    def save_z(self, lo: int, hi: int) -> None:
        self.run_range(_SAVE_Z + lo, _SAVE_Z + hi)

    def save_p(self, lo: int = 0, hi: int = 15) -> None:
        self.run_range(_SAVE_P + lo, _SAVE_P + hi)

    def save_z_p(self, lo: int) -> None:
        """Z<lo>..Z31 and P0..P15 in one run (the slices are adjacent)."""
        self.run_range(_SAVE_Z + lo, _SAVE_P + 15)

    def save_p_ffr(self) -> None:
        self.run_range(_SAVE_P, _SAVE_FFR + 2)

    def load_z(self, lo: int, hi: int) -> None:
        self.run_range(_LOAD_Z + lo, _LOAD_Z + hi)

    def load_p(self, lo: int, hi: int) -> None:
        self.run_range(_LOAD_P + lo, _LOAD_P + hi)
