"""emukern.loader.asm: llvm-mc/ld.lld assembly, caching, diagnostics, snippets."""
from __future__ import annotations

import concurrent.futures
import os
import struct
from pathlib import Path

import pytest

from emukern.errors import AssemblerError
from emukern.loader import asm
from emukern.loader.asm import (
    assemble,
    assemble_arm64_snippet,
    assemble_snippet,
    detect_arch_from_source,
)
from emukern.loader.elf import load_elf

from loader_testutil import DATA, INC, needs_llvm

pytestmark = needs_llvm

VSETVLI_T0_A0_E32_M1_TA_MA = 0x0D0572D7
RDVL_X9_1 = 0x04BF5029


def _words(data: bytes) -> list[int]:
    return [w for (w,) in struct.iter_unpack("<I", data[: len(data) // 4 * 4])]


def test_riscv_program_uses_llvm_mc(rv_elf: Path) -> None:
    img = load_elf(rv_elf)
    assert img.arch == "riscv64"
    text = img.segment_at(img.entry)
    assert text is not None and "x" in text.perms
    code = text.data[img.entry - text.vaddr:]
    # RVC makes the stream 2-byte aligned; search at every half-word.
    assert any(int.from_bytes(code[i:i + 4], "little") == VSETVLI_T0_A0_E32_M1_TA_MA
               for i in range(0, len(code) - 3, 2))


def test_arm64_program_uses_llvm_mc(arm_elf: Path) -> None:
    img = load_elf(arm_elf)
    assert img.arch == "arm64"
    text = img.segment_at(img.entry)
    assert text is not None
    assert _words(text.data[img.entry - text.vaddr:])[0] == RDVL_X9_1


def test_cache_hit_does_not_run_tools(rv_elf: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = rv_elf.stat().st_mtime_ns

    def boom(*a, **k):
        raise AssertionError("tool run on a cache hit")

    monkeypatch.setattr(asm, "_run_tool", boom)
    again = assemble(DATA / "rv_hello.S", "riscv64", include_dirs=[INC])
    assert again == rv_elf
    assert again.stat().st_mtime_ns == before


def test_output_is_deterministic_and_in_cache_dir(rv_elf: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    assert rv_elf.parent == asm.cache_dir()
    monkeypatch.setenv("EMUKERN_CACHE", str(tmp_path))
    fresh = assemble(DATA / "rv_hello.S", "riscv64", include_dirs=[INC])
    assert fresh.parent == tmp_path / "asm"
    assert fresh.read_bytes() == rv_elf.read_bytes()
    assert not [p for p in fresh.parent.iterdir() if p.name.endswith(".tmp")]


def test_include_change_invalidates_cache(tmp_path: Path) -> None:
    src = tmp_path / "p.S"
    inc = tmp_path / "consts.inc"
    src.write_text('.include "consts.inc"\n.globl _start\n_start:\n  li a0, VAL\n  ecall\n')
    inc.write_text(".equ VAL, 1\n")
    a = assemble(src, "riscv64")
    b = assemble(src, "riscv64")
    assert a == b
    inc.write_text(".equ VAL, 2\n")
    c = assemble(src, "riscv64")
    assert c != a
    assert c.read_bytes() != a.read_bytes()


def test_nested_include_is_hashed(tmp_path: Path) -> None:
    (tmp_path / "outer.inc").write_text('.include "inner.inc"\n')
    inner = tmp_path / "inner.inc"
    inner.write_text(".equ VAL, 1\n")
    src = tmp_path / "p.S"
    src.write_text('.include "outer.inc"\n.globl _start\n_start:\n  mov x0, #VAL\n  svc #0\n')
    a = assemble(src, "arm64")
    inner.write_text(".equ VAL, 3\n")
    b = assemble(src, "arm64")
    assert a != b


def test_text_argument(tmp_path: Path) -> None:
    p = assemble(tmp_path / "virtual.S", "arm64",
                 text=".globl _start\n_start:\n  mov x0, #5\n  mov x8, #93\n  svc #0\n")
    img = load_elf(p)
    assert img.symbols["_start"] == img.entry
    assert p.name.startswith("virtual-arm64-")


def test_assembly_error_names_file_and_line(tmp_path: Path) -> None:
    src = tmp_path / "broken.S"
    src.write_text(".globl _start\n_start:\n  addi a0, a0, 1\n  frobnicate a0, a1\n")
    with pytest.raises(AssemblerError) as ei:
        assemble(src, "riscv64")
    msg = str(ei.value)
    assert "broken.S:4:" in msg
    assert "frobnicate" in msg


def test_assembly_error_with_text_uses_display_name(tmp_path: Path) -> None:
    with pytest.raises(AssemblerError) as ei:
        assemble(tmp_path / "shown.S", "arm64", text=".globl _start\n_start:\n  bogus x0\n")
    assert "shown.S:3:" in ei.value.message
    assert "emukern-asm-" not in ei.value.message  # the temp path is not leaked


def test_missing_include_is_an_error(tmp_path: Path) -> None:
    src = tmp_path / "inc.S"
    src.write_text('.include "does_not_exist.inc"\n')
    with pytest.raises(AssemblerError, match="does_not_exist.inc"):
        assemble(src, "riscv64")


def test_link_error_undefined_symbol(tmp_path: Path) -> None:
    src = tmp_path / "undef.S"
    src.write_text(".globl _start\n_start:\n  bl nowhere\n")
    with pytest.raises(AssemblerError, match="nowhere"):
        assemble(src, "arm64")


def test_missing_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("EMUKERN_LLVM_MC", raising=False)
    monkeypatch.delenv("EMUKERN_LD_LLD", raising=False)
    with pytest.raises(AssemblerError) as ei:
        assemble(DATA / "rv_hello.S", "riscv64", include_dirs=[INC])
    assert "llvm-mc" in ei.value.message and "keystone" in ei.value.message
    assert ei.value.hint is not None and "apt-get install llvm lld" in ei.value.hint


def test_missing_linker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("EMUKERN_LLVM_MC", "/usr/bin/llvm-mc")
    monkeypatch.delenv("EMUKERN_LD_LLD", raising=False)
    if not os.path.exists("/usr/bin/llvm-mc"):
        pytest.skip("llvm-mc not at /usr/bin")
    with pytest.raises(AssemblerError) as ei:
        asm.find_tools()
    assert "ld.lld" in ei.value.message
    assert "apt-get install llvm lld" in (ei.value.hint or "")


def test_bad_env_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMUKERN_LLVM_MC", "/nonexistent/llvm-mc")
    with pytest.raises(AssemblerError, match="EMUKERN_LLVM_MC"):
        asm.find_tools()


def test_unknown_arch() -> None:
    with pytest.raises(AssemblerError, match="x86"):
        assemble(DATA / "rv_hello.S", "x86")


def test_unreadable_source(tmp_path: Path) -> None:
    with pytest.raises(AssemblerError, match="cannot read"):
        assemble(tmp_path / "missing.S", "riscv64")


def test_concurrent_assembly_is_safe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMUKERN_CACHE", str(tmp_path / "cache"))
    src = tmp_path / "c.S"
    src.write_text(".globl _start\n_start:\n  li a7, 93\n  ecall\n")
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        outs = list(ex.map(lambda _: assemble(src, "riscv64"), range(8)))
    assert len(set(outs)) == 1
    load_elf(outs[0])
    assert [p.name for p in (tmp_path / "cache" / "asm").iterdir()] == [outs[0].name]


def test_detect_arch(tmp_path: Path) -> None:
    assert detect_arch_from_source(DATA / "rv_hello.S") == "riscv64"      # first-line comment
    assert detect_arch_from_source(DATA / "arm64_hello.S") == "arm64"
    assert detect_arch_from_source("guest_asm/riscv/hello.S") == "riscv64"  # path only
    assert detect_arch_from_source("guest_asm/arm64/sub/hello.S") == "arm64"
    (tmp_path / "riscv").mkdir()
    f = tmp_path / "riscv" / "x.S"
    f.write_text("# arch: arm64\n")
    assert detect_arch_from_source(f) == "arm64"                           # comment wins
    g = tmp_path / "plain.S"
    g.write_text("nop\n")
    assert detect_arch_from_source(g) is None


def test_arm64_snippet_keystone() -> None:
    code = assemble_arm64_snippet("mov x0, #1\nsvc #0")
    assert _words(code) == [0xD2800020, 0xD4000001]
    # PC-relative: branch at addr 0x1000 to 0x1008
    assert _words(assemble_arm64_snippet("b 0x1008", addr=0x1000)) == [0x14000002]
    with pytest.raises(AssemblerError):
        assemble_arm64_snippet("not_an_instruction x0")


def test_assemble_snippet_paths() -> None:
    assert _words(assemble_snippet("ret", "arm64")) == [0xD65F03C0]            # keystone
    assert _words(assemble_snippet("rdvl x9, #1", "arm64")) == [RDVL_X9_1]     # llvm-mc (SVE)
    rv = assemble_snippet("vsetvli t0, a0, e32, m1, ta, ma\necall", "riscv64")
    assert _words(rv) == [VSETVLI_T0_A0_E32_M1_TA_MA, 0x00000073]
    assert assemble_snippet("c.nop", "riscv64") == b"\x01\x00"
    # memoised
    assert assemble_snippet("ret", "arm64") is assemble_snippet("ret", "arm64")
    with pytest.raises(AssemblerError):
        assemble_snippet("bogus", "riscv64")
