"""Words that abort Unicorn's AArch64 translator (issue 11, item 3).

Unicorn 2.1.4 (QEMU 5.0) hits g_assert_not_reached() on 314 of the 480 (class, Q, U, a,
opcode) shapes of the AdvSIMD fp16 classes: SIGABRT of the host.  emukern must give the guest
SIGILL (what the CPU and qemu-aarch64 do) whatever way the word got into executable memory, and
a native crash it does not know about must still end in a clear report.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from emukern.machine.a64_unallocated import find_aborting_words, translator_aborts
from emukern.machine.supervise import EXIT_INTERNAL, run_supervised

ROOT = Path(__file__).resolve().parents[2]
SIGILL = 4
ISSUE_WORDS = [0x2ECD0C6D, 0x0EC425A0, 0x4E78B988]
sys.path.insert(0, str(ROOT / "tools"))
import fuzz_insn  # noqa: E402


def elf_prog(word: int) -> str:
    return f""".globl _start
_start:
    mov x0, #3
    .inst {word:#x}
    mov x8, #94
    svc #0
"""


@pytest.mark.parametrize("word", ISSUE_WORDS)
def test_fp16_word_in_the_elf_is_sigill(run_guest, word):
    r, _ = run_guest(elf_prog(word), arch="arm64")
    assert r.signal == SIGILL, (r.message, r.fault)
    assert r.fault["pc"] == r.fault.get("addr", r.fault["pc"]) and r.fault["insn"] == word


@pytest.mark.parametrize("word", ISSUE_WORDS)
def test_cli_survives_and_reports(tmp_path, word):
    src = tmp_path / "fp16.S"
    src.write_text("# arch: arm64\n" + elf_prog(word))
    js = tmp_path / "out.json"
    p = subprocess.run([sys.executable, "-m", "emukern.cli", "run", str(src), "--json", str(js)],
                       capture_output=True, text=True, timeout=120, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 128 + SIGILL, p.stderr[-1500:]
    assert "SIGILL" in p.stderr and json.loads(js.read_text())["signal"] == SIGILL


@pytest.mark.qemu
@pytest.mark.parametrize("word", ISSUE_WORDS)
def test_qemu_aarch64_agrees(tmp_path, word):
    if shutil.which("qemu-aarch64") is None:
        pytest.skip("qemu-aarch64 not installed")
    from emukern.loader.asm import assemble
    src = tmp_path / "fp16.S"
    src.write_text("# arch: arm64\n" + elf_prog(word))
    q = subprocess.run(["qemu-aarch64", str(assemble(src, "arm64"))], capture_output=True, timeout=60)
    assert q.returncode == -SIGILL


# A page the program writes, executes, rewrites with an fp16 word and executes again: the second
# call must see the new word (a scanned page is write-protected in Unicorn's view).
SMC = """.globl _start
_start:
    mov x0, #0
    mov x1, #4096
    mov x2, #7            // PROT_READ|WRITE|EXEC
    mov x3, #0x22         // MAP_PRIVATE|ANONYMOUS
    mov x4, #-1
    mov x5, #0
    mov x8, #222
    svc #0
    mov x19, x0
    ldr w9, =0x52800020   // mov w0, #1
    ldr w10, =0xd65f03c0  // ret
    str w9, [x19]
    str w10, [x19, #4]
    dc cvau, x19
    dsb ish
    ic ivau, x19
    dsb ish
    isb
    blr x19               // returns 1
    cmp x0, #1
    b.ne bad
    {patch}
    dc cvau, x19
    dsb ish
    ic ivau, x19
    dsb ish
    isb
    blr x19               // must be SIGILL
    mov x0, #0
    mov x8, #94
    svc #0
bad:
    mov x0, #99
    mov x8, #94
    svc #0
.ltorg
.data
msg: .word {word:#x}
fds: .word 0, 0
"""

STORE = "ldr w9, ={word:#x}\n    str w9, [x19]"
# the kernel writes the word: read() from a pipe into the (already executed) code page
VIA_PIPE = """adr x20, fds
    mov x0, x20
    mov x1, #0
    mov x8, #59           // pipe2
    svc #0
    ldr w0, [x20, #4]
    adr x1, msg
    mov x2, #4
    mov x8, #64           // write
    svc #0
    ldr w0, [x20]
    mov x1, x19
    mov x2, #4
    mov x8, #63           // read into the code page
    svc #0
    cmp x0, #4
    b.ne bad"""
# mprotect path: the page goes read-write, gets the word, then read-execute again
VIA_MPROTECT = """mov x0, x19
    mov x1, #4096
    mov x2, #3
    mov x8, #226
    svc #0
    ldr w9, ={word:#x}
    str w9, [x19]
    mov x0, x19
    mov x1, #4096
    mov x2, #5
    mov x8, #226
    svc #0"""


@pytest.mark.parametrize("how", ["store", "pipe", "mprotect"])
@pytest.mark.parametrize("word", ISSUE_WORDS[:2])
def test_fp16_word_written_at_run_time_is_sigill(run_guest, how, word):
    patch = {"store": STORE, "pipe": VIA_PIPE, "mprotect": VIA_MPROTECT}[how].format(word=word)
    r, _ = run_guest(SMC.format(patch=patch, word=word), arch="arm64")
    assert r.signal == SIGILL, (how, r.stop_reason, r.message, r.fault)
    assert r.fault["insn"] == word


# ---- the predicate against the installed Unicorn (fork per case) --------------------------------
def test_predicate_matches_unicorn_on_a_sample_of_the_fp16_sweep():
    rng = random.Random(11)
    shapes = fuzz_insn.fp16_shapes()
    assert len(shapes) == 480
    sample = rng.sample(shapes, 48)
    words = ISSUE_WORDS + [gen(rng) for _cls, _key, gen in sample]
    results = [fuzz_insn.raw_case("arm64", w) for w in words]
    aborted = {w for w, res in zip(words, results) if res == "abort"}
    assert {w for w in words if translator_aborts(w)} == aborted
    assert set(ISSUE_WORDS) <= aborted


def test_find_aborting_words_is_aligned():
    data = (0xD503201F).to_bytes(4, "little") + ISSUE_WORDS[2].to_bytes(4, "little") + b"\x4e" * 5
    assert find_aborting_words(data, 0x1000) == [0x1004]


# ---- the fallback for crashes nobody knows yet ---------------------------------------------------
def test_supervisor_reports_a_native_abort(capfd, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "stdout", sys.__stdout__)
    monkeypatch.setattr(sys, "stderr", sys.__stderr__)
    js = tmp_path / "crash.json"
    rc = run_supervised(lambda: os.kill(os.getpid(), signal.SIGABRT) or 0, what="prog", json_path=str(js))
    err = capfd.readouterr().err
    assert rc == EXIT_INTERNAL and "died of SIGABRT" in err and "hint:" in err
    assert json.loads(js.read_text())["host_signal"] == "SIGABRT"


def test_supervisor_passes_the_exit_status_through(monkeypatch):
    monkeypatch.setattr(sys, "stdout", sys.__stdout__)
    monkeypatch.setattr(sys, "stderr", sys.__stderr__)
    assert run_supervised(lambda: 42, what="prog") == 42


def test_supervisor_on_a_real_unicorn_abort(tmp_path):
    # the child feeds the word straight to Unicorn (no emukern scan): QEMU aborts, the parent reports
    code = ("import sys; sys.path.insert(0, 'tools'); import fuzz_insn\n"
            "from emukern.machine.supervise import run_supervised\n"
            f"sys.exit(run_supervised(lambda: fuzz_insn._raw_child('arm64', {ISSUE_WORDS[0]}) or 0, what='raw'))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == EXIT_INTERNAL, (p.returncode, p.stderr[-1500:])
    assert "died of SIGABRT" in p.stderr
