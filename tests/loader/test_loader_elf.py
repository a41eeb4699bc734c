"""emukern.loader.elf: good images for both arches, and one crafted file per failure mode."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emukern.errors import ElfError
from emukern.loader.elf import (
    DYN_LOAD_BASE,
    PT_LOAD,
    ElfImage,
    load_elf,
)

from loader_testutil import needs_llvm

pytestmark = needs_llvm

EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
PHDR = struct.Struct("<IIQQQQQQ")
PT_NULL, PT_INTERP = 0, 3


# ---- byte patching helpers -------------------------------------------------------------------

def ehdr(blob: bytes) -> list:
    return list(EHDR.unpack_from(blob, 0))


def set_ehdr(blob: bytes, **kw) -> bytes:
    names = ["ident", "type", "machine", "version", "entry", "phoff", "shoff", "flags",
             "ehsize", "phentsize", "phnum", "shentsize", "shnum", "shstrndx"]
    vals = ehdr(blob)
    for k, v in kw.items():
        vals[names.index(k)] = v
    b = bytearray(blob)
    EHDR.pack_into(b, 0, *vals)
    return bytes(b)


def phdrs(blob: bytes) -> list[list[int]]:
    e = ehdr(blob)
    phoff, phnum = e[5], e[10]
    return [list(PHDR.unpack_from(blob, phoff + i * PHDR.size)) for i in range(phnum)]


def set_phdr(blob: bytes, index: int, **kw) -> bytes:
    names = ["type", "flags", "offset", "vaddr", "paddr", "filesz", "memsz", "align"]
    e = ehdr(blob)
    off = e[5] + index * PHDR.size
    vals = list(PHDR.unpack_from(blob, off))
    for k, v in kw.items():
        vals[names.index(k)] = v
    b = bytearray(blob)
    PHDR.pack_into(b, off, *vals)
    return bytes(b)


def load_indices(blob: bytes) -> list[int]:
    return [i for i, p in enumerate(phdrs(blob)) if p[0] == PT_LOAD]


def exec_load(blob: bytes) -> int:
    return next(i for i in load_indices(blob) if phdrs(blob)[i][1] & 1)


def data_load(blob: bytes) -> int:
    return next(i for i in load_indices(blob) if phdrs(blob)[i][1] & 2)


def expect_error(blob: bytes, *needles: str) -> ElfError:
    with pytest.raises(ElfError) as ei:
        load_elf(blob)
    text = str(ei.value).lower()
    for n in needles:
        assert n.lower() in text, f"{n!r} not in {text!r}"
    return ei.value


# ---- good files ------------------------------------------------------------------------------

def _check_good(img: ElfImage, arch: str, path: Path) -> None:
    assert img.arch == arch
    assert img.path == str(path)
    assert img.elf_type == "ET_EXEC" and img.load_bias == 0
    perms = [s.perms for s in img.segments]
    assert "r-x" in perms and "rw-" in perms
    assert img.segments == sorted(img.segments, key=lambda s: s.vaddr)
    text = img.segment_at(img.entry)
    assert text is not None and text.perms == "r-x"
    assert img.symbols["_start"] == img.entry
    data = next(s for s in img.segments if s.perms == "rw-")
    assert img.symbols["msg"] == data.vaddr
    assert data.data[:3] == b"hi\n"
    assert data.memsz >= 8192 + 3 and data.filesz < data.memsz     # .bss
    assert "buf" in img.symbols                                     # locals too
    assert img.brk_start % 4096 == 0
    assert img.brk_start >= max(s.end for s in img.segments)
    assert img.brk_start - max(s.end for s in img.segments) < 4096
    assert img.phent == 56 and img.phnum >= 3
    # AT_PHDR points at the program headers inside a loaded segment
    seg = img.segment_at(img.phdr_addr)
    assert seg is not None
    raw = path.read_bytes()
    phoff = ehdr(raw)[5]
    assert seg.data[img.phdr_addr - seg.vaddr:][:56] == raw[phoff:phoff + 56]
    maps = img.mappings()
    for m in maps:
        assert m.start % 4096 == 0 and m.size % 4096 == 0
    for s in img.segments:
        assert any(m.start <= s.vaddr and s.end <= m.end for m in maps)
    assert img.nearest_symbol(img.entry + 4) == ("_start", 4)


def test_good_riscv(rv_elf: Path) -> None:
    img = load_elf(rv_elf)
    _check_good(img, "riscv64", rv_elf)
    # e_entry read straight from the ELF header (offset 0x18), independent of the loader, and the
    # linker put it at _start (ld.lld's default entry symbol)
    import struct
    e_entry = struct.unpack_from("<Q", rv_elf.read_bytes(), 0x18)[0]
    assert img.entry == e_entry == img.symbols["_start"]


def test_good_arm64(arm_elf: Path) -> None:
    _check_good(load_elf(arm_elf), "arm64", arm_elf)


def test_load_from_bytes_and_pathlike(rv_elf: Path, rv_bytes: bytes) -> None:
    a = load_elf(rv_bytes)
    b = load_elf(str(rv_elf))
    assert a.path is None
    assert a.entry == b.entry and a.segments == b.segments and a.symbols == b.symbols
    assert load_elf(bytearray(rv_bytes)).entry == a.entry


def test_stripped_symbols_still_loads(rv_bytes: bytes) -> None:
    # Remove the section header table entirely: Linux doesn't need it, neither do we.
    img = load_elf(set_ehdr(rv_bytes, shoff=0, shnum=0, shstrndx=0))
    assert img.symbols == {}
    broken = load_elf(set_ehdr(rv_bytes, shoff=len(rv_bytes) + 100))
    assert broken.symbols == {}
    assert broken.entry == img.entry


def test_et_dyn_without_interp_loads_at_fixed_base(rv_bytes: bytes) -> None:
    good = load_elf(rv_bytes)
    img = load_elf(set_ehdr(rv_bytes, type=3))
    assert img.elf_type == "ET_DYN"
    low = min(s.vaddr for s in good.segments) & ~0xFFF
    assert img.load_bias == DYN_LOAD_BASE - low
    assert img.entry == good.entry + img.load_bias
    assert min(s.vaddr for s in img.segments) == DYN_LOAD_BASE + (
        min(s.vaddr for s in good.segments) & 0xFFF)
    assert img.symbols["_start"] == img.entry
    assert img.phdr_addr == good.phdr_addr + img.load_bias


# ---- bad files -------------------------------------------------------------------------------

def test_not_elf() -> None:
    expect_error(b"hello world, this is not an ELF file at all" * 4, "not an elf", "magic")
    expect_error(b"", "empty")
    e = expect_error(b"#!/bin/sh\necho hi\n", "not an elf")
    assert "script" in (e.hint or "")


def test_truncated_header(rv_bytes: bytes) -> None:
    expect_error(rv_bytes[:10], "truncated")
    expect_error(rv_bytes[:40], "truncated", "header")


def test_elfclass32(rv_bytes: bytes) -> None:
    b = bytearray(rv_bytes)
    b[4] = 1
    expect_error(bytes(b), "32-bit")


def test_big_endian(rv_bytes: bytes) -> None:
    b = bytearray(rv_bytes)
    b[5] = 2
    expect_error(bytes(b), "big-endian")


def test_wrong_machine_x86_64(rv_bytes: bytes) -> None:
    e = expect_error(set_ehdr(rv_bytes, machine=62), "x86-64", "risc-v 64", "aarch64")
    assert e.hint


def test_wrong_machine_unknown(rv_bytes: bytes) -> None:
    expect_error(set_ehdr(rv_bytes, machine=0x7777), "unknown machine")


def test_host_binary_is_rejected_by_machine() -> None:
    import sys

    exe = Path(sys.executable).resolve()
    if exe.read_bytes()[:4] != b"\x7fELF":
        pytest.skip("host python is not an ELF")
    with pytest.raises(ElfError) as ei:
        load_elf(exe)
    assert str(exe) in ei.value.message


def test_relocatable_object(rv_bytes: bytes) -> None:
    expect_error(set_ehdr(rv_bytes, type=1), "not an executable", "et_rel")


def test_core_file(rv_bytes: bytes) -> None:
    expect_error(set_ehdr(rv_bytes, type=4), "not an executable")


def test_dynamic_pt_interp(rv_bytes: bytes) -> None:
    # Turn the first non-LOAD header into a PT_INTERP pointing at a fake path.
    b = bytearray(rv_bytes + b"/lib/ld-linux-riscv64-lp64d.so.1\0")
    off = len(rv_bytes)
    idx = next(i for i, p in enumerate(phdrs(rv_bytes)) if p[0] != PT_LOAD)
    patched = set_phdr(bytes(b), idx, type=PT_INTERP, offset=off, filesz=34, memsz=34)
    e = expect_error(patched, "dynamically linked", "ld-linux-riscv64")
    assert "-static" in (e.hint or "")


def test_load_past_eof_truncated(rv_bytes: bytes) -> None:
    i = data_load(rv_bytes)
    p = phdrs(rv_bytes)[i]
    cut = rv_bytes[: p[2] + 1]  # file ends inside the data segment
    expect_error(cut, "truncated", f"pt_load #{i}")
    expect_error(set_phdr(rv_bytes, i, offset=len(rv_bytes) + 0x1000), "truncated")


def test_phdrs_past_eof(rv_bytes: bytes) -> None:
    expect_error(set_ehdr(rv_bytes, phoff=len(rv_bytes) - 8), "truncated", "program headers")
    expect_error(set_ehdr(rv_bytes, phentsize=32), "entry size")


def test_overlapping_segments(rv_bytes: bytes) -> None:
    x, d = exec_load(rv_bytes), data_load(rv_bytes)
    xv = phdrs(rv_bytes)[x][3]
    expect_error(set_phdr(rv_bytes, d, vaddr=xv + 2), "overlap")


def test_filesz_gt_memsz(rv_bytes: bytes) -> None:
    i = data_load(rv_bytes)
    p = phdrs(rv_bytes)[i]
    expect_error(set_phdr(rv_bytes, i, memsz=p[5] - 1 if p[5] else 0, filesz=p[5] or 1),
                 "p_filesz", "p_memsz")


def test_segment_at_zero(rv_bytes: bytes) -> None:
    i = load_indices(rv_bytes)[0]
    expect_error(set_phdr(rv_bytes, i, vaddr=0), "address 0x0", "first page")


def test_segment_in_top_half(rv_bytes: bytes) -> None:
    i = data_load(rv_bytes)
    expect_error(set_phdr(rv_bytes, i, vaddr=0xFFFF_8000_0000_0000), "kernel")
    expect_error(set_phdr(rv_bytes, i, vaddr=0xFFFF_FFFF_FFFF_F000, memsz=0x2000,
                          filesz=0), "user")


def test_no_pt_load(rv_bytes: bytes) -> None:
    b = rv_bytes
    for i in load_indices(rv_bytes):
        b = set_phdr(b, i, type=PT_NULL)
    expect_error(b, "no pt_load")
    expect_error(set_ehdr(rv_bytes, phnum=0), "no program headers")


def test_entry_outside_exec_segment(rv_bytes: bytes) -> None:
    d = data_load(rv_bytes)
    expect_error(set_ehdr(rv_bytes, entry=phdrs(rv_bytes)[d][3]), "entry point", "executable")
    expect_error(set_ehdr(rv_bytes, entry=0x1234_5678), "entry point")


def test_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ElfError, match="no such file"):
        load_elf(tmp_path / "nope")
    with pytest.raises(ElfError, match="directory"):
        load_elf(tmp_path)


# ---- fuzzing: only ElfError or success -------------------------------------------------------

def _try(blob: bytes) -> None:
    try:
        img = load_elf(blob)
    except ElfError as e:
        assert e.message
        # the friendly wrapper may not hide a loader crash: every rejection is a deliberate check
        assert e.internal is None, f"loader crashed: {e.internal!r} ({e.message})"
        return
    assert img.arch in ("riscv64", "arm64")
    assert any(s.contains(img.entry) and "x" in s.perms for s in img.segments)
    img.mappings()


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.binary(max_size=512), st.booleans())
def test_fuzz_random_bytes(data: bytes, with_magic: bool) -> None:
    _try((b"\x7fELF\x02\x01\x01" + data) if with_magic else data)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_fuzz_mutated_good_elf(rv_bytes: bytes, arm_elf: Path, data: st.DataObject) -> None:
    base = data.draw(st.sampled_from([rv_bytes, arm_elf.read_bytes()]))
    b = bytearray(base)
    n = data.draw(st.integers(1, 8))
    for _ in range(n):
        # Bias towards the headers (first 0x200 bytes) and the section table at the end.
        region = data.draw(st.sampled_from(["head", "tail", "any"]))
        if region == "head":
            pos = data.draw(st.integers(0, min(0x1FF, len(b) - 1)))
        elif region == "tail":
            pos = data.draw(st.integers(max(0, len(b) - 0x200), len(b) - 1))
        else:
            pos = data.draw(st.integers(0, len(b) - 1))
        b[pos] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        b = b[: data.draw(st.integers(0, len(b)))]
    _try(bytes(b))


def test_wrapped_loader_crash_is_marked(monkeypatch: pytest.MonkeyPatch, rv_bytes: bytes) -> None:
    """The property above can fail: a crash inside the loader comes out as an ElfError marked internal."""
    from emukern.loader import elf as elf_mod

    def crash(blob: bytes, path: str | None, *args: object, **kwargs: object) -> None:
        raise IndexError("index out of range")
    monkeypatch.setattr(elf_mod, "_load", crash)
    with pytest.raises(ElfError) as ei:
        load_elf(rv_bytes)
    assert isinstance(ei.value.internal, IndexError) and "malformed ELF file" in ei.value.message
    with pytest.raises(AssertionError, match="loader crashed"):
        _try(rv_bytes)
