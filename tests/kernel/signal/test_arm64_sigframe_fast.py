"""The arm64 round trip's shortcuts give what the general code gives.

* ``_template_records`` (rt_sigreturn's look at a frame laid out as setup_rt_frame lays out an
  FPSIMD-only one) returns exactly what ``parse_user_sigframe``'s walk finds for those bytes, and
  None -- the walk decides -- for every other layout, including corrupt variants of the template.
* ``Arm64Cpu.read_fpsimd_state`` (one batch) reads what the register API reads one by one, and
  ``_syscall_word``'s two-mapping cache returns the words ``_word`` reads, across alternating
  mappings and after the layout changes.
"""
from __future__ import annotations

import random

import pytest
from unicorn import arm64_const as UA

from emukern.kernel.arch.arm64 import signal as S
from emukern.machine.clock import Clock
from emukern.machine.cpu_arm64 import Arm64Cpu
from emukern.machine.memory import AddressSpace

FRAME = 0x7F_0000


class _Bytes:
    """``read(addr, n)`` over a frame at FRAME (what parse_user_sigframe reads through)."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw

    def read(self, addr: int, n: int) -> bytes:
        o = addr - FRAME
        if o < 0 or o + n > len(self.raw):
            from emukern.errors import MemoryFault
            raise MemoryFault(addr, "r")
        return self.raw[o:o + n]


def _frame(records: list[tuple[int, int]]) -> bytes:
    b = bytearray(S.SIZEOF_FRAME)
    off = S.RESERVED
    for magic, size in records:
        b[off:off + 8] = S._REC_HDR.pack(magic, size)
        off += max(size, 8) if magic else 8
    return bytes(b)


FPSIMD = (S.FPSIMD_MAGIC, S.FPSIMD_CONTEXT_SIZE)
SVE_HDR = (S.SVE_MAGIC, S.SVE_CONTEXT_HDR)
END = (0, 0)


@pytest.mark.parametrize("records", [[FPSIMD, END], [FPSIMD, SVE_HDR, END]], ids=["no-sve", "sve-header"])
def test_template_layouts_match_the_walk(records):
    raw = _frame(records)
    fast = S._template_records(raw, FRAME)
    walk, err = S.parse_user_sigframe(_Bytes(raw), FRAME)
    assert err == "" and fast == walk


@pytest.mark.parametrize("records", [
    [END],                                             # no fpsimd record
    [(S.FPSIMD_MAGIC, 512), END],                      # wrong size
    [FPSIMD, FPSIMD, END],                             # two fpsimd records
    [FPSIMD, (S.SVE_MAGIC, 16 + 8), END],              # SVE record with (too few) registers
    [FPSIMD, SVE_HDR, (S.ESR_MAGIC, 16), END],         # more records after the SVE header
    [FPSIMD, (0, 16)],                                 # terminator with a size
    [FPSIMD, SVE_HDR, (0x1234, 16), END],              # unknown magic
    [FPSIMD, (S.ESR_MAGIC, 16), END],                  # esr_context (a fault's frame)
])
def test_other_layouts_are_left_to_the_walk(records):
    assert S._template_records(_frame(records), FRAME) is None


def test_random_corruptions_never_disagree_with_the_walk():
    base = _frame([FPSIMD, SVE_HDR, END])
    r = random.Random(7)
    lo, hi = S.RESERVED, S.RESERVED + S.FPSIMD_CONTEXT_SIZE + 32
    for _ in range(400):
        b = bytearray(base)
        for _ in range(r.randint(1, 3)):
            b[r.randrange(lo, hi)] = r.getrandbits(8)
        raw = bytes(b)
        fast = S._template_records(raw, FRAME)
        if fast is not None:
            walk, err = S.parse_user_sigframe(_Bytes(raw), FRAME)
            assert err == "" and fast == walk


@pytest.mark.parametrize("vl", [128, 512])
def test_read_fpsimd_state_is_the_register_api(vl):
    cpu = Arm64Cpu(0, Clock(), sve_vl=vl)
    r = random.Random(vl)
    vs = [r.getrandbits(128) for _ in range(32)]
    for i, v in enumerate(vs):
        cpu.uc.reg_write(UA.UC_ARM64_REG_Q0 + i, v)
    cpu.uc.reg_write(UA.UC_ARM64_REG_FPSR, 0x8000009F)
    cpu.uc.reg_write(UA.UC_ARM64_REG_FPCR, 3 << 22)
    raw = cpu.read_fpsimd_state()
    assert len(raw) == 520
    assert [int.from_bytes(raw[16 * i:16 * i + 16], "little") for i in range(32)] == vs
    assert int.from_bytes(raw[512:516], "little") == cpu.uc.reg_read(UA.UC_ARM64_REG_FPSR)
    assert int.from_bytes(raw[516:520], "little") == cpu.uc.reg_read(UA.UC_ARM64_REG_FPCR)


def test_syscall_word_cache_follows_two_mappings_and_layout_changes():
    cpu = Arm64Cpu(0, Clock(), sve_vl=128)
    mm = AddressSpace()
    svc = lambda imm: (0xD4000001 | (imm << 5)).to_bytes(4, "little")   # noqa: E731
    mm.map(0x10000, 0x1000, "r-x", "code", svc(1) + svc(2))
    mm.map(0x40000, 0x1000, "r-x", "[vdso]", svc(3))
    mm.map(0x80000, 0x1000, "r-x", "lib", svc(4))
    cpu.attach_mm(mm)
    for pc in [0x10000, 0x40000, 0x10004, 0x40000, 0x80000, 0x10000, 0x40000, 0x80000]:
        assert cpu._syscall_word(pc) == cpu._word(pc)
    assert len(cpu._svc_map) == 2
    mm.unmap(0x40000, 0x1000)
    mm.map(0x40000, 0x1000, "r-x", "[vdso]", svc(9))
    assert cpu._syscall_word(0x40000) == (0xD4000001 | (9 << 5))
