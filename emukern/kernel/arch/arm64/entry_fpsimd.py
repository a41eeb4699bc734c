"""arch/arm64/kernel/entry-fpsimd.S and fpsimdmacros.h: the kernel's FP/SVE register sequences,
and the memory behind ``thread.sve_state`` / ``thread.uw.fpsimd_state``.

Only V0-V31 (the low 128 bits of Z) are reachable through the Unicorn API: Z bits above 128, P0-P15
and FFR need real SVE instructions.  So, as in Linux, the kernel saves, loads and flushes the
registers with short instruction sequences (``sve_save_state``, ``sve_load_state``,
``sve_flush_live``, ``sve_flush_p``, ``fpsimd_save_state``, ``fpsimd_load_state``) that run on the
CPU -- their cost is counted instruction by instruction.  This module owns what they are (the
instruction words, checked against llvm-mc by tests/kernel/arm64/test_entry_fpsimd.py) and where
each task's state lives (:class:`SveStateArea`); the machine only runs "these kernel instructions
with this buffer" (:meth:`emukern.machine.cpu_arm64.Arm64Cpu.queue_stub`), see "Machine pages" in
:mod:`emukern.machine.cpu_arm64` for the isolation it guarantees while doing so.

Arguments the sequences take (registers x0-x3, pointing into the CPU's bounce buffer, where the
machine copies the task's slot in before a load and out after a save):
``sve_save_state``/``sve_load_state``: x0 = Z0, x1 = P0 (FFR is stored as a 17th predicate),
x2 = FPSR/FPCR words; ``fpsimd_*_state``: x0 = V0..V31 (512 bytes) then FPSR, FPCR; the flushes
take none.  Each ends in ``brk #0xe4e``, the machine's stand-in for ``ret``.
"""
from __future__ import annotations

import mmap
from typing import TYPE_CHECKING, Any

from emukern.machine.cpu_arm64 import (BOUNCE_BASE, BOUNCE_SIZE, KERNEL_SEQ_BRK_IMM, KERNEL_SEQ_RET,
                                       KERNEL_TEXT, SVE_VL_MAX, KernelSeq)

if TYPE_CHECKING:
    from emukern.machine.cpu_arm64 import Arm64Cpu

# Slot addresses of the state area are handles the kernel uses for a task's buffer (Linux's
# kernel pointers); no CPU maps them -- a sequence sees one slot at a time, copied through the
# CPU's bounce buffer.
SVE_AREA_BASE = 0x40_0000_0000
STUB_LOADS = frozenset({"sve_load_state", "fpsimd_load_state"})
STUB_SAVES = frozenset({"sve_save_state", "fpsimd_save_state"})


def _imm9_mul_vl(imm: int) -> int:
    if not -256 <= imm <= 255:
        raise ValueError(f"mul vl offset {imm} out of range")
    imm &= 0x1FF
    return ((imm >> 3) << 16) | ((imm & 7) << 10)


def enc_str_z(zt: int, rn: int, imm: int) -> int:
    return 0xE5804000 | _imm9_mul_vl(imm) | (rn << 5) | zt


def enc_ldr_z(zt: int, rn: int, imm: int) -> int:
    return 0x85804000 | _imm9_mul_vl(imm) | (rn << 5) | zt


def enc_str_p(pt: int, rn: int, imm: int) -> int:
    return 0xE5800000 | _imm9_mul_vl(imm) | (rn << 5) | pt


def enc_ldr_p(pt: int, rn: int, imm: int) -> int:
    return 0x85800000 | _imm9_mul_vl(imm) | (rn << 5) | pt


def enc_rdffr(pd: int) -> int:          # rdffr pd.b
    return 0x2519F000 | pd


def enc_wrffr(pn: int) -> int:          # wrffr pn.b
    return 0x25289000 | (pn << 5)


def enc_pfalse(pd: int) -> int:         # pfalse pd.b
    return 0x2518E400 | pd


def enc_mov_v(vd: int, vn: int) -> int:  # mov vd.16b, vn.16b (orr vd.16b, vn.16b, vn.16b)
    return 0x4EA01C00 | (vn << 16) | (vn << 5) | vd


def enc_stp_q(t1: int, t2: int, rn: int, off: int) -> int:
    return 0xAD000000 | (((off // 16) & 0x7F) << 15) | (t2 << 10) | (rn << 5) | t1


def enc_ldp_q(t1: int, t2: int, rn: int, off: int) -> int:
    return 0xAD400000 | (((off // 16) & 0x7F) << 15) | (t2 << 10) | (rn << 5) | t1


def enc_str_w(rt: int, rn: int, off: int) -> int:
    return 0xB9000000 | ((off // 4) << 10) | (rn << 5) | rt


def enc_ldr_w(rt: int, rn: int, off: int) -> int:
    return 0xB9400000 | ((off // 4) << 10) | (rn << 5) | rt


def enc_mrs_fpsr(rt: int) -> int:
    return 0xD53B4420 | rt


def enc_mrs_fpcr(rt: int) -> int:
    return 0xD53B4400 | rt


def enc_msr_fpsr(rt: int) -> int:
    return 0xD51B4420 | rt


def enc_msr_fpcr(rt: int) -> int:
    return 0xD51B4400 | rt


def enc_brk(imm: int) -> int:
    return 0xD4200000 | (imm << 5)


STUB_RET = enc_brk(KERNEL_SEQ_BRK_IMM)
assert STUB_RET == KERNEL_SEQ_RET


def build_stub_words() -> dict[str, list[int]]:
    """The kernel's FP/SVE register sequences (arch/arm64/kernel/entry-fpsimd.S, fpsimdmacros.h).

    Arguments: ``sve_save_state``/``sve_load_state``: x0 = Z0 slot, x1 = P0 slot (FFR is stored as
    a 17th predicate), x2 = FPSR/FPCR words; ``fpsimd_*_state``: x0 = V0..V31 (512 bytes) then FPSR,
    FPCR; the flushes take none.  The text form of each is in :data:`STUB_TEXT` (checked by tests).
    """
    save = ([enc_str_z(i, 0, i) for i in range(32)] + [enc_str_p(i, 1, i) for i in range(16)]
            + [enc_rdffr(0), enc_str_p(0, 1, 16), enc_ldr_p(0, 1, 0),
               enc_mrs_fpsr(3), enc_str_w(3, 2, 0), enc_mrs_fpcr(3), enc_str_w(3, 2, 4), STUB_RET])
    load = ([enc_ldr_p(0, 1, 16), enc_wrffr(0)] + [enc_ldr_p(i, 1, i) for i in range(16)]
            + [enc_ldr_z(i, 0, i) for i in range(32)]
            + [enc_ldr_w(3, 2, 0), enc_msr_fpsr(3), enc_ldr_w(3, 2, 4), enc_msr_fpcr(3), STUB_RET])
    flush_p = [enc_pfalse(i) for i in range(16)] + [enc_wrffr(0), STUB_RET]
    flush_live = [enc_mov_v(i, i) for i in range(32)] + flush_p
    fp_save = ([enc_stp_q(i, i + 1, 0, 16 * i) for i in range(0, 32, 2)]
               + [enc_mrs_fpsr(3), enc_str_w(3, 0, 512), enc_mrs_fpcr(3), enc_str_w(3, 0, 516), STUB_RET])
    fp_load = ([enc_ldp_q(i, i + 1, 0, 16 * i) for i in range(0, 32, 2)]
               + [enc_ldr_w(3, 0, 512), enc_msr_fpsr(3), enc_ldr_w(3, 0, 516), enc_msr_fpcr(3), STUB_RET])
    return {"sve_save_state": save, "sve_load_state": load, "sve_flush_live": flush_live,
            "sve_flush_p": flush_p, "fpsimd_save_state": fp_save, "fpsimd_load_state": fp_load}


def _stub_text() -> dict[str, str]:
    ret = f"brk #{KERNEL_SEQ_BRK_IMM:#x}"
    fl_p = [f"pfalse p{i}.b" for i in range(16)] + ["wrffr p0.b", ret]
    return {
        "sve_save_state": "\n".join([f"str z{i}, [x0, #{i}, mul vl]" for i in range(32)]
                                    + [f"str p{i}, [x1, #{i}, mul vl]" for i in range(16)]
                                    + ["rdffr p0.b", "str p0, [x1, #16, mul vl]", "ldr p0, [x1]",
                                       "mrs x3, fpsr", "str w3, [x2]", "mrs x3, fpcr", "str w3, [x2, #4]", ret]),
        "sve_load_state": "\n".join(["ldr p0, [x1, #16, mul vl]", "wrffr p0.b"]
                                    + [f"ldr p{i}, [x1, #{i}, mul vl]" for i in range(16)]
                                    + [f"ldr z{i}, [x0, #{i}, mul vl]" for i in range(32)]
                                    + ["ldr w3, [x2]", "msr fpsr, x3", "ldr w3, [x2, #4]", "msr fpcr, x3", ret]),
        "sve_flush_live": "\n".join([f"mov v{i}.16b, v{i}.16b" for i in range(32)] + fl_p),
        "sve_flush_p": "\n".join(fl_p),
        "fpsimd_save_state": "\n".join([f"stp q{i}, q{i + 1}, [x0, #{16 * i}]" for i in range(0, 32, 2)]
                                       + ["mrs x3, fpsr", "str w3, [x0, #512]", "mrs x3, fpcr",
                                          "str w3, [x0, #516]", ret]),
        "fpsimd_load_state": "\n".join([f"ldp q{i}, q{i + 1}, [x0, #{16 * i}]" for i in range(0, 32, 2)]
                                       + ["ldr w3, [x0, #512]", "msr fpsr, x3", "ldr w3, [x0, #516]",
                                          "msr fpcr, x3", ret]),
    }


STUB_TEXT = _stub_text()
STUB_WORDS = build_stub_words()


def _slot_size(max_vl: int) -> tuple[int, int, int]:
    """(p_off, fp_off, slot_size) of one task buffer for vector lengths up to ``max_vl``."""
    vlb = max_vl // 8
    p_off = 32 * vlb
    fp_off = (p_off + 17 * (vlb // 8) + 15) & ~15
    return p_off, fp_off, (fp_off + 528 + 63) & ~63


def _layout_stubs() -> tuple[dict[str, KernelSeq], dict[str, tuple[int, int]], bytes]:
    seqs: dict[str, KernelSeq] = {}
    table: dict[str, tuple[int, int]] = {}
    image = bytearray()
    for name, words in STUB_WORDS.items():
        off = len(image)
        image += b"".join(w.to_bytes(4, "little") for w in words)
        # fpsimd_load_state may be performed through the register file by the machine (which
        # checks that these words are the sequence it knows): the FPSIMD load after rt_sigreturn
        # and on every return to a task whose registers are not live, ~15 us of bounce-buffer
        # permission changes and a stub chain less each time
        seqs[name] = KernelSeq(off, len(words), loads=name in STUB_LOADS, saves=name in STUB_SAVES,
                               regfile_load=name == "fpsimd_load_state")
        table[name] = (KERNEL_TEXT + off, len(words))
        image += bytes((-len(image)) % 64)
    return seqs, table, bytes(image)


SEQS, STUBS, STUB_IMAGE = _layout_stubs()  # name -> KernelSeq; name -> (entry, insns incl. the brk)


def install(cpu: "Arm64Cpu") -> None:
    """Load the entry-fpsimd sequences into a CPU's kernel text (idempotent)."""
    cpu.install_kernel_text(STUB_IMAGE, SEQS)


class SveStateArea:
    """Host memory for the kernel's per-task FP/SVE register buffers.

    One anonymous host mapping that no CPU maps (so no guest access can reach it); a buffer saved
    on one CPU is loadable on another.  Slots are named by addresses from :data:`SVE_AREA_BASE`.  Slot layout (Linux's ``sve_state`` then ``user_fpsimd_state``): Z0..Z31 at the
    saving VL, P0..P15 then FFR at ``p_off``, V0..V31 at ``fp_off`` then FPSR and FPCR (32-bit).
    """

    def __init__(self, slots: int = 1160, max_vl: int = SVE_VL_MAX, base: int = SVE_AREA_BASE) -> None:
        self.max_vl = max_vl
        self.base = base
        self.p_off, self.fp_off, self.slot_size = _slot_size(max_vl)
        if self.slot_size > BOUNCE_SIZE:
            raise ValueError(f"SVE state slots of {self.slot_size} bytes do not fit the CPU's "
                             f"{BOUNCE_SIZE}-byte bounce buffer")
        self.fpsr_off = self.fp_off + 512
        self.size = (slots * self.slot_size + 0xFFF) & ~0xFFF
        # (an anonymous mapping: untouched slots cost no host memory; a small area is plain bytes)
        self.buf: mmap.mmap | bytearray = mmap.mmap(-1, self.size) if slots > 4 else bytearray(self.size)
        self._free = list(range(slots - 1, -1, -1))
        # zeroes to copy from (zero(): sve_alloc's memset on every SVE access trap), not made anew
        self._zeros = memoryview(bytes(self.slot_size))

    def view(self, slot: int) -> memoryview:
        """One slot's bytes (what a save or load sequence copies through the bounce buffer)."""
        o = self.slot_of(slot) - self.base
        return memoryview(self.buf)[o:o + self.slot_size]

    def alloc(self) -> int:
        """A zeroed slot; returns its guest address."""
        if not self._free:
            raise MemoryError("SVE state area exhausted")
        addr = self.base + self._free.pop() * self.slot_size
        self.zero(addr, self.slot_size)
        return addr

    def release(self, addr: int) -> None:
        self._free.append((addr - self.base) // self.slot_size)

    def slot_of(self, addr: int) -> int:
        """The slot an address inside it belongs to (a stub argument points into one slot)."""
        i = (addr - self.base) // self.slot_size
        if not 0 <= addr - self.base < self.size or i * self.slot_size + self.slot_size > self.size:
            raise ValueError(f"{addr:#x} is not inside the FP/SVE state area")
        return self.base + i * self.slot_size

    def read(self, addr: int, n: int) -> bytes:
        o = addr - self.base
        return bytes(self.buf[o:o + n])

    def write(self, addr: int, data: bytes) -> None:
        o = addr - self.base
        self.buf[o:o + len(data)] = data

    def zero(self, addr: int, n: int) -> None:
        o = addr - self.base
        if 0 <= n <= self.slot_size:
            self.buf[o:o + n] = self._zeros[:n]
        else:
            self.write(addr, bytes(n))

    # typed views of one slot
    def zreg(self, slot: int, vl: int, i: int) -> bytes:
        return self.read(slot + i * vl // 8, vl // 8)

    def preg(self, slot: int, vl: int, i: int) -> bytes:
        return self.read(slot + self.p_off + i * vl // 64, vl // 64)

    def vregs(self, slot: int) -> list[int]:
        raw = self.read(slot + self.fp_off, 512)
        return [int.from_bytes(raw[16 * i:16 * i + 16], "little") for i in range(32)]

    def fpsr_fpcr(self, slot: int) -> tuple[int, int]:
        raw = self.read(slot + self.fpsr_off, 8)
        return int.from_bytes(raw[:4], "little"), int.from_bytes(raw[4:], "little")

    def decode_sve(self, slot: int, vl: int) -> dict[str, Any]:
        fpsr, fpcr = self.fpsr_fpcr(slot)
        return {"vl": vl, "z": [self.zreg(slot, vl, i) for i in range(32)],
                "p": [self.preg(slot, vl, i) for i in range(16)], "ffr": self.preg(slot, vl, 16),
                "fpsr": fpsr, "fpcr": fpcr}

    def encode_sve(self, slot: int, st: dict[str, Any]) -> None:
        vl = st["vl"]
        for i, z in enumerate(st["z"]):
            self.write(slot + i * vl // 8, bytes(z).ljust(vl // 8, b"\0")[:vl // 8])
        for i, p in enumerate(list(st["p"]) + [st.get("ffr", b"")]):
            self.write(slot + self.p_off + i * vl // 64, bytes(p).ljust(vl // 64, b"\0")[:vl // 64])
        self.write(slot + self.fpsr_off, st.get("fpsr", 0).to_bytes(4, "little") + st.get("fpcr", 0).to_bytes(4, "little"))


# ---- running the sequences on one task's slot --------------------------------------------------
def sve_slot_args(area: SveStateArea) -> tuple[int, int, int]:
    """(x0, x1, x2) of sve_save_state/sve_load_state: Z0, P0 and FPSR inside the bounce buffer."""
    return BOUNCE_BASE, BOUNCE_BASE + area.p_off, BOUNCE_BASE + area.fpsr_off


def fpsimd_slot_args(area: SveStateArea) -> tuple[int]:
    """(x0,) of fpsimd_save_state/fpsimd_load_state: V0 inside the bounce buffer."""
    return (BOUNCE_BASE + area.fp_off,)


def queue(cpu: "Arm64Cpu", name: str, area: SveStateArea | None = None, slot: int = 0) -> None:
    """Queue one sequence on ``cpu``; a save or load works on ``slot`` of ``area``."""
    if name in STUB_SAVES or name in STUB_LOADS:
        assert area is not None
        args = sve_slot_args(area) if name.startswith("sve_") else fpsimd_slot_args(area)
        cpu.queue_stub(name, *args, buf=area.view(slot))
    else:
        cpu.queue_stub(name)


def queue_fpsimd_load(cpu: "Arm64Cpu", area: SveStateArea, slot: int) -> None:
    """:func:`queue` of ``fpsimd_load_state`` (task_fpsimd_load's FPSIMD-only load, on every
    return to user after rt_sigreturn): the same stub, its buffer and x0, without the name tests."""
    o = slot - area.base
    if 0 <= o <= area.size - area.slot_size and not o % area.slot_size:
        buf = memoryview(area.buf)[o:o + area.slot_size]
    else:
        buf = area.view(slot)                   # (rounds down to the slot, or raises)
    cpu.queue_stub("fpsimd_load_state", BOUNCE_BASE + area.fp_off, buf=buf)


def run(cpu: "Arm64Cpu", name: str, area: SveStateArea | None = None, slot: int = 0) -> None:
    """Queue one sequence and run the CPU's queue now."""
    queue(cpu, name, area, slot)
    cpu.stub_sync()


_inspect: list[tuple[SveStateArea, int]] = []     # the buffer inspections use (made on first use)


def _inspect_slot() -> tuple[SveStateArea, int]:
    if not _inspect:
        area = SveStateArea(slots=1)               # room for the largest VL
        _inspect.append((area, area.alloc()))
    return _inspect[0]


def read_sve_state(cpu: "Arm64Cpu") -> dict[str, Any]:
    """Z0-Z31 at the CPU's current VL, P0-P15 and FFR (bytes, little-endian), FPSR/FPCR, VL.

    What a debugger or a test sees: ``sve_save_state`` into a private buffer after any queued
    kernel work, leaving no trace on the clock (an inspection, not kernel work)."""
    install(cpu)
    area, slot = _inspect_slot()
    cpu.run_stub_quietly("sve_save_state", *sve_slot_args(area), buf=area.view(slot))
    return area.decode_sve(slot, cpu.vl)


def write_sve_state(cpu: "Arm64Cpu", st: dict[str, Any]) -> None:
    """Load Z/P/FFR (and FPSR/FPCR) at the current VL with ``sve_load_state`` (tests, debugger).

    Missing entries load as zero; like :func:`read_sve_state` it does not advance the clock."""
    full = {"z": [b""] * 32, "p": [b""] * 16, "ffr": b"", "fpsr": 0, "fpcr": 0, **st, "vl": cpu.vl}
    install(cpu)
    area, slot = _inspect_slot()
    area.encode_sve(slot, full)
    cpu.run_stub_quietly("sve_load_state", *sve_slot_args(area), buf=area.view(slot))
