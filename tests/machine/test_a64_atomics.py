"""FEAT_LSE atomics without FEAT_LSE2 (machine/a64_atomics.py): a misaligned one takes an
alignment fault (kernel/arch/arm64/fault.py: SIGBUS BUS_ADRALN, si_addr = the address), an aligned one
completes with the architectural result.  qemu-aarch64 (whose translator enforces the alignment)
is the oracle for every result and fault of guest_asm/c/lse_atomics.c."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from emukern.api import Machine
from emukern.machine.a64_atomics import decode_atomic, find_atomic_words



@pytest.fixture(scope="module")
def lse(cguest):
    return cguest("lse_atomics", "arm64", "-march=armv8.3-a")


@pytest.mark.qemu
def test_results_and_faults_match_qemu(lse):
    if shutil.which("qemu-aarch64") is None:
        pytest.skip("qemu-aarch64 is not installed")
    q = subprocess.run(["qemu-aarch64", str(lse)], capture_output=True, timeout=120)
    r = Machine(arch="arm64").load(lse).run()
    assert r.exit_status == q.returncode == 0, r.message
    assert r.stdout == q.stdout
    out = r.stdout.decode()
    assert out.count("SIGBUS code 1 (BUS_ADRALN 1), si_addr is the address 1") == 4
    assert "ldaddh at +2: no fault" in out


@pytest.mark.parametrize("word,want", [
    (0xB820003F, ("add", 4, 0, 1, 31)),       # the hwcap selftest's STADD W0, [X1]
    (0xF8E20020, ("add", 8, 2, 1, 0)),        # LDADDAL X2, X0, [X1]
    (0x38A28020, ("swp", 1, 2, 1, 0)),        # SWPAB W2, W0, [X1]
    (0xC8A07C22, ("cas", 8, 0, 1, 2)),        # CAS X0, X2, [X1]
    (0x48207C22, ("casp", 8, 0, 1, 2)),       # CASP X0, X1, X2, X3, [X1]
    (0xB8BFC020, ("ldapr", 4, 31, 1, 0)),     # LDAPR W0, [X1]
])
def test_decode(word, want):
    a = decode_atomic(word)
    assert a is not None and (a.op, a.size, a.rs, a.rn, a.rt) == want


@pytest.mark.parametrize("word", [0xB9400020, 0x885F7C20, 0x889FFC20, 0xC85F7C20, 0xF8616820,
                                  0x48217C22])   # LDR, LDXR, STLR, LDXR x, LDR (register), odd CASP
def test_other_words_are_not_atomics(word):
    assert decode_atomic(word) is None


def test_scan_finds_only_the_atomics():
    words = [0xB9400020, 0xB820003F, 0xD503201F, 0xC8A07C22]
    data = b"".join(w.to_bytes(4, "little") for w in words)
    assert find_atomic_words(data, 0x1000) == [0x1004, 0x100C]


SRC = """
.include "syscalls.inc"
.arch armv8.1-a+lse
.globl _start
_start:
    sub sp, sp, #64
    add x1, sp, #{off}
    mov w0, #5
    str wzr, [sp, #8]
    stadd w0, [x1]
    ldr w0, [x1]
    mov x8, #SYS_exit_group
    svc #0
"""


def test_aligned_stadd_completes_and_counts_one_instruction(tmp_path):
    src = tmp_path / "stadd.S"
    src.write_text(SRC.format(off=8))
    r = Machine(arch="arm64").load(src).run()
    assert r.exit_status == 5 and r.user_insns == 8


def test_misaligned_stadd_is_sigbus_adraln(tmp_path):
    src = tmp_path / "stadd.S"
    src.write_text(SRC.format(off=10))
    r = Machine(arch="arm64").load(src).run()
    assert r.signal == 7 and r.exit_status == 128 + 7
    assert "alignment fault" in r.fault["why"]
    assert r.fault["addr"] % 16 == 10


def test_cli_names_the_fault_with_the_whole_instruction(tmp_path):
    import sys
    src = tmp_path / "stadd.S"
    src.write_text(SRC.format(off=10))
    r = subprocess.run([sys.executable, "-m", "emukern.cli", "run", "--arch", "arm64", str(src)],
                       capture_output=True, text=True)
    assert r.returncode == 128 + 7
    assert "SIGBUS at pc" in r.stderr and "stadd w0, [x1]" in r.stderr and "alignment fault" in r.stderr


def _words_scan(data: bytes, base: int, keep) -> list[int]:
    """The page scan as a word-by-word loop: the reference the byte-stride filter must match."""
    return [base + i for i in range(0, len(data) - 3, 4) if keep(int.from_bytes(data[i:i + 4], "little"))]


def test_stride_filter_scans_like_a_word_loop():
    """find_atomic_words and find_aborting_words (their WordFilter: bytes 1-3 of each word
    tested per stride, no Python step per word) find exactly what testing every aligned word
    finds: on random pages, on pages of random words with each class's fixed bits forced (every
    candidate, most of them decoding to nothing), and at the page's last word."""
    import random

    from emukern.machine.a64_unallocated import find_aborting_words, translator_aborts
    rnd = random.Random(30)
    classes = [(0x3F20_0C00, 0x3820_0000), (0x3FA0_7C00, 0x08A0_7C00), (0xBFA0_7C00, 0x0820_7C00),
               (0x9F60_C400, 0x0E40_0400), (0x9F7E_0C00, 0x0E78_0800), (0xDF7E_0C00, 0x5E78_0800)]
    pages = [rnd.randbytes(4096) for _ in range(40)]
    for mask, val in classes:
        pages += [b"".join(((rnd.getrandbits(32) & ~mask) | val).to_bytes(4, "little") for _ in range(1024))
                  for _ in range(6)]
    pages.append(bytes(4092) + (0xF8E20020).to_bytes(4, "little"))
    pages.append(bytes(4092) + (0x2E7808C0).to_bytes(4, "little"))
    for data in pages:
        found: dict = {}
        assert find_atomic_words(data, 0x40000, found) == _words_scan(data, 0x40000, lambda w: decode_atomic(w) is not None)
        assert found == {a: decode_atomic(int.from_bytes(data[a - 0x40000:a - 0x40000 + 4], "little")) for a in found}
        assert find_aborting_words(data, 0x40000) == _words_scan(data, 0x40000, translator_aborts)
