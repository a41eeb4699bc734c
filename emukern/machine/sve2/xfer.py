"""Register transfer for the SVE2 unit: the machine's own microcode that moves Z and P between
the CPU and Python.

Unicorn 2.1.4 exposes only V0-V31 (the low 128 bits of Z) through its register API; Z above
128 bits and P0-P15 can only be reached by SVE instructions the CPU executes.  So the machine
keeps two fixed sequences in its execute-only stub page at :data:`MICROCODE` -- machine
microcode, not kernel text:

* ``SAVE``: ``str z0..z31, [x0, #n, mul vl]``, ``str p0..p15, [x1, #n, mul vl]``, ``brk``;
* ``LOAD``: ``ldr z0..z31``, ``ldr p0..p15``, ``brk``; entered at the lowest register the
  instruction wrote (the registers after it reload the values SAVE stored, unchanged), so one
  run writes back any set of registers.

They run *inside the guest's own emulation run*, not as a nested ``emu_start`` (measured: a
nested run from a hook costs ~30 us and ends the outer run): on the UNDEF the CPU points the PC
at SAVE and returns from the hook; the closing ``brk`` comes back to the INTR hook, where the
unit executes the instruction on what SAVE stored, then runs LOAD the same way if anything was
written, and finally puts the PC after the instruction.  Reading everything costs 48 native
instructions, much less than a second hook round trip, so the unit always reads all of Z and P.

The data goes through the CPU's bounce buffer (:data:`XFER_BASE`), which is no-access
outside a kernel stub or a transfer (``mem_protect`` around it) and zeroed after each transfer; the code page is guarded against user execution by the CPU's CodeGuard (opened
only while microcode runs), so EL0 can neither jump into the microcode nor see another task's
registers through the page.  Every microcode instruction the counter sees (the ``brk``s
included) is taken back out of the count: the guest sees exactly one retired instruction.  The
sequences run at the VL in ZCR_EL1 (the guest's; ``mul vl`` offsets scale with it) and with
CPACR_EL1.ZEN as the guest has it (on: the unit only runs when EL0 may use SVE).
"""
from __future__ import annotations

from typing import Any

MICROCODE = 0x3F_FFFF_8000      # inside the CPU's execute-only stub page (cpu_arm64.STUB_BASE)
XFER_BASE = 0x40_0000_0000      # the CPU's bounce buffer (cpu_arm64.BOUNCE_BASE), see TransferPage
Z_AREA = 0                      # 32 x VL bytes (VL <= 256 bytes)
P_AREA = 32 * 256               # 16 x VL/8 bytes

SAVE = 0                        # word index of the SAVE sequence (str z0)
LOAD = 64                       # word index of the LOAD sequence (ldr z0)
SEQ_LEN = 49                    # 32 Z + 16 P + the closing brk
BRK_IMM = 0xE4F
BRK = 0xD4200000 | (BRK_IMM << 5)


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


def microcode_words() -> list[int]:
    """The microcode, word by word (see the module docstring for the layout)."""
    w = [BRK] * 128
    for n in range(32):
        w[SAVE + n] = str_z(n, 0, n)
        w[LOAD + n] = ldr_z(n, 0, n)
    for n in range(16):
        w[SAVE + 32 + n] = str_p(n, 1, n)
        w[LOAD + 32 + n] = ldr_p(n, 1, n)
    return w


MICROCODE_BYTES = b"".join(x.to_bytes(4, "little") for x in microcode_words())
SAVE_BRK = MICROCODE + 4 * (SAVE + 48)
LOAD_BRK = MICROCODE + 4 * (LOAD + 48)


def save_entry() -> int:
    return MICROCODE + 4 * SAVE


def load_entry(lowest_z: int | None, lowest_p: int | None) -> int:
    """Where LOAD starts so that it writes Z<lowest_z>.. and/or P<lowest_p>.. back."""
    idx = lowest_z if lowest_z is not None else 32 + (lowest_p or 0)
    return MICROCODE + 4 * (LOAD + idx)


class MicrocodeOverrun(RuntimeError):
    """A transfer sequence did not end where it must: an emulator bug, never a guest event."""


class TransferPage:
    """The transfer area of one CPU: the CPU's bounce buffer (cpu_arm64.BOUNCE_BASE), which
    the kernel's save/load stubs use only while one of them runs -- never while a user
    instruction is being executed, which is when the unit uses it.  It is no-access to EL0
    outside a stub or transfer; the CPU's ``_open_window``/``_close_window`` open it together
    with the code guard and shut both (flushing the TLB entries the microcode filled)."""

    def __init__(self, cpu: Any) -> None:
        self.cpu = cpu
        self.buf = cpu._bounce
        assert len(self.buf) >= P_AREA + 16 * 32
        self.is_open = False

    def open(self) -> None:
        self.cpu._open_window(bounce=True)
        self.is_open = True

    def close(self) -> None:
        """Shut it and zero it: no register contents stay behind for the next task."""
        if self.is_open:
            self.cpu._close_window()
            self.buf[:P_AREA + 16 * 32] = bytes(P_AREA + 16 * 32)
            self.is_open = False
