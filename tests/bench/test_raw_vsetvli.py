"""The raw-Unicorn floor of the vsetvli + getppid figure (emukern/bench/raw_vsetvli.py)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from emukern.api import result_fields
from emukern.bench import raw_vsetvli as RV
from emukern.bench.selfbench import _elf


@pytest.mark.parametrize("word, vlen, want", [
    (0x0D0072D7, 512, (5, 0, 16)),            # vsetvli t0, zero, e32, m1, ta, ma
    (0x0D0072D7, 256, (5, 0, 8)),
    (0xC012F557, 512, (10, -6, 128)),         # vsetivli a0, 5, e8, m2, tu, mu (AVL immediate 5)
    (0x0DF675D7, 512, None),                  # vsetvli a1, a2, e64, mf2: SEW > LMUL*ELEN, vill
    (0x80C5F557, 512, None),                  # vsetvl a0, a1, a2: vtype from a register
    (0x00000013, 512, None),                  # nop: not a vector config word
])
def test_vsetvl_action(word, vlen, want):
    assert RV._vsetvl_action(word, vlen) == want


def _run(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "emukern.bench.raw_vsetvli", *args],
                          capture_output=True, timeout=120, check=False)


from emukern.machine.counter import native_available

MODES = [[], ["--direct"]] + ([["--native"]] if native_available() else [])


@pytest.mark.parametrize("direct", MODES)
def test_runs_the_null_syscall_guest_to_its_exit(direct):
    elf = _elf("riscv64", "null_syscall")
    p = _run("--vlen", "512", *direct, str(elf), "300", "1")
    assert p.returncode == 0, p.stderr
    got = result_fields(p.stdout)
    assert got["iterations"] == 300 and got["cycles"] > 0          # rdcycle: host ticks in raw Unicorn


@pytest.mark.parametrize("mode", MODES)
def test_a_word_it_does_not_model_stops_with_sigill_status(mode):
    elf = _elf("riscv64", "vec_loop")                  # vadd.vv: no vector unit here
    p = _run("--vlen", "256", *mode, str(elf), "1", "16", "0")
    assert p.returncode == 132
