"""Hand-made ELF64 files for the loader tests (a uniquely named helper module)."""
from __future__ import annotations

import struct

# riscv64: li a0, 42; li a7, 93; ecall   (exit(42))
RV_EXIT42 = struct.pack("<3I", 0x02A00513, 0x05D00893, 0x00000073)
PT_NULL, PT_LOAD = 0, 1
PF_X, PF_W, PF_R = 1, 2, 4


def make_elf(extra: list[tuple[int, int, int, int]] = (), code: bytes = RV_EXIT42) -> bytes:
    """A static riscv64 ET_EXEC: one r-x PT_LOAD at 0x10000 holding ``code``, then ``extra``
    program headers given as (p_type, p_flags, p_vaddr, p_memsz), all without file bytes."""
    phnum = 1 + len(extra)
    code_off = (64 + 56 * phnum + 0xFFF) & ~0xFFF
    ehdr = struct.pack("<16sHHIQQQIHHHHHH", b"\x7fELF\x02\x01\x01" + bytes(9), 2, 243, 1,
                       0x10000, 64, 0, 0, 64, 56, phnum, 64, 0, 0)
    ph = [struct.pack("<IIQQQQQQ", PT_LOAD, PF_R | PF_X, code_off, 0x10000, 0x10000,
                      len(code), len(code), 0x1000)]
    for p_type, flags, vaddr, memsz in extra:
        ph.append(struct.pack("<IIQQQQQQ", p_type, flags, 0, vaddr, vaddr, 0, memsz, 0x1000))
    blob = ehdr + b"".join(ph)
    return blob + bytes(code_off - len(blob)) + code
