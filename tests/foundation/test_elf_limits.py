"""Loading limits that protect the host: huge segments, segments in emukern's reserved range,
segments that share a page."""
from __future__ import annotations

import struct

import pytest

from emukern.api import Machine
from emukern.errors import ElfError
from emukern.loader.asm import assemble


def _phdrs(blob: bytearray):
    e_phoff, = struct.unpack_from("<Q", blob, 0x20)
    e_phentsize, e_phnum = struct.unpack_from("<HH", blob, 0x36)
    for i in range(e_phnum):
        yield e_phoff + i * e_phentsize


def _relocate(blob: bytearray, delta: int) -> bytearray:
    """Move every PT_LOAD and the entry point by ``delta`` (position-independent code only)."""
    for off in _phdrs(blob):
        p_type, = struct.unpack_from("<I", blob, off)
        if p_type in (1, 6):   # PT_LOAD, PT_PHDR
            vaddr, paddr = struct.unpack_from("<QQ", blob, off + 0x10)
            struct.pack_into("<QQ", blob, off + 0x10, vaddr + delta, paddr + delta)
    entry, = struct.unpack_from("<Q", blob, 0x18)
    struct.pack_into("<Q", blob, 0x18, entry + delta)
    return blob


@pytest.fixture
def hello_elf(guest_asm):
    return assemble(guest_asm / "riscv" / "hello.S", "riscv64")


def test_huge_bss_is_a_clear_elf_error(hello_elf, tmp_path):
    blob = bytearray(hello_elf.read_bytes())
    for off in _phdrs(blob):
        if struct.unpack_from("<I", blob, off)[0] == 1:
            struct.pack_into("<Q", blob, off + 0x28, 1 << 44)     # p_memsz
            break
    bad = tmp_path / "huge.elf"
    bad.write_bytes(blob)
    with pytest.raises(ElfError, match="MiB"):
        Machine().load(bad)


def test_segment_in_the_reserved_range_is_a_clear_error(hello_elf, tmp_path):
    moved = tmp_path / "high.elf"
    moved.write_bytes(_relocate(bytearray(hello_elf.read_bytes()), 0x3F_F000_0000))
    with pytest.raises(ElfError, match="link the program at a lower address|range emukern keeps"):
        Machine().load(moved)


def test_relocated_program_still_runs(hello_elf, tmp_path):
    # hello is position independent (auipc-relative): moving it by 1 GiB must not change anything
    moved = tmp_path / "moved.elf"
    moved.write_bytes(_relocate(bytearray(hello_elf.read_bytes()), 0x4000_0000))
    r = Machine().load(moved).run()
    assert r.exit_status == 0 and r.stdout.startswith(b"Hello")
