"""Many CPUs under an address-space limit (issue 11, item 16).

Unicorn reserves 1 GiB of translated-code buffer per instance by default: ``--cpus 7`` under an
8 GB limit died inside QEMU ("Could not allocate dynamic translator buffer", exit 1, no
summary).  Each CPU now asks for TB_BUFFER_SIZE, and a refusal is a clear emukern error.
"""
from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_limited(args: list[str], limit_bytes: int) -> subprocess.CompletedProcess:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "emukern.cli", "run", *args], capture_output=True, text=True,
                          timeout=300, preexec_fn=limit, env=env, cwd=ROOT)


@pytest.mark.parametrize("arch", ["arm64", "riscv"])
def test_64_cpus_fit_in_4_gib_of_address_space(arch):
    p = run_limited(["--cpus", "64", f"guest_asm/{arch}/hello.S"], 4 << 30)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "Hello" in p.stdout or "hello" in p.stdout.lower()


def test_refused_translation_buffer_is_a_clear_error():
    p = run_limited(["--cpus", "64", "guest_asm/arm64/hello.S"], 1400 << 20)
    assert p.returncode == 2, (p.returncode, p.stderr[-2000:])
    assert "translated-code buffer" in p.stderr and "hint:" in p.stderr
    assert "Traceback" not in p.stderr and "Could not allocate" not in p.stderr
