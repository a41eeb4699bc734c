"""emukern.disasm: known words for both arches; garbage never raises."""
from __future__ import annotations

import struct
import sys
import types

from hypothesis import given, settings
from hypothesis import strategies as st

from emukern import disasm as D
from emukern.disasm import disasm, disasm_one


def w(*words: int) -> bytes:
    return b"".join(struct.pack("<I", x) for x in words)


def test_riscv_known() -> None:
    assert disasm_one("riscv64", w(0x00000073), 0x1000) == "ecall"
    assert disasm_one("riscv64", w(0x00000013), 0x1000) == "nop"
    out = disasm("riscv64", b"\x01\x00" + w(0x00A50533), 0x1000, 5)   # c.nop; add a0,a0,a0
    assert [(a, s) for a, s, _ in out] == [(0x1000, 2), (0x1002, 4)]
    assert out[0][2] == "c.nop" and out[1][2] == "add a0, a0, a0"


def test_arm64_known() -> None:
    out = disasm("arm64", w(0xD503201F, 0xD65F03C0, 0x04BF5029), 0x400000, 3)
    assert out == [(0x400000, 4, "nop"), (0x400004, 4, "ret"), (0x400008, 4, "rdvl x9, #1")]
    assert disasm_one("aarch64", w(0xD4000001), 0) == "svc #0"


def test_count_limits_and_short_code() -> None:
    assert len(disasm("arm64", w(0xD503201F) * 10, 0, 3)) == 3
    assert disasm("arm64", b"\x1f\x20", 0, 4) == [(0, 2, ".byte 0x1f, 0x20")]
    assert disasm("riscv64", b"\x13\x00", 0, 4) == [(0, 2, ".byte 0x13, 0x00")]
    assert disasm("arm64", b"", 0) == []
    assert disasm_one("arm64", b"", 0) == "(no bytes)"


def test_undecodable_words() -> None:
    assert disasm_one("arm64", w(0xFFFFFFFF), 0) == ".word 0xffffffff"
    # An RVV word capstone 5 cannot decode: falls back to rvv.disasm or .word
    text = disasm_one("riscv64", w(0x0D0572D7), 0)
    assert text == ".word 0x0d0572d7" or "vsetvli" in text


def test_rvv_fallback_is_used(monkeypatch) -> None:
    fake = types.ModuleType("emukern.machine.rvv")
    fake.disasm = lambda word: f"vfake {word:#x}"  # type: ignore[attr-defined]
    import emukern.machine as machine

    monkeypatch.setitem(sys.modules, "emukern.machine.rvv", fake)
    monkeypatch.setattr(machine, "rvv", fake, raising=False)
    assert disasm_one("riscv64", w(0x0D0572D7), 0) == "vfake 0xd0572d7"
    # a broken rvv.disasm must not make disasm raise
    fake.disasm = lambda word: 1 / 0  # type: ignore[attr-defined]
    assert disasm_one("riscv64", w(0x0D0572D7), 0) == ".word 0x0d0572d7"
    fake.disasm = lambda word: None  # type: ignore[attr-defined]
    assert disasm_one("riscv64", w(0x0D0572D7), 0) == ".word 0x0d0572d7"


def test_unknown_arch_never_raises() -> None:
    assert disasm("mips", w(0x12345678), 0) == [(0, 4, ".word 0x12345678")]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["riscv64", "arm64"]), st.binary(max_size=64),
       st.integers(0, 2**64 - 1), st.integers(1, 20))
def test_garbage_never_raises(arch: str, code: bytes, addr: int, count: int) -> None:
    out = disasm(arch, code, addr, count)
    assert len(out) <= count
    assert sum(s for _, s, _ in out) <= len(code)
    assert all(isinstance(t, str) and t for _, _, t in out)
    off = 0
    for a, s, _ in out:
        assert a == addr + off
        off += s
    assert isinstance(disasm_one(arch, code, addr), str)
