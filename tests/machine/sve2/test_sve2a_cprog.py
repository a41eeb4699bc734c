"""A C program built for Armv9 (ACLE SVE2 intrinsics and auto-vectorized loops, about fifty
distinct SVE2 integer instructions of int_mac / int_narrow / int_complex / int_misc2 in one
binary: guest_asm/c/sve2a_acle.c) prints the same hashes under emukern as under
``qemu-aarch64 -cpu max`` at VL 128, 256 and 512 -- the words a real program reaches, in the
order and register allocation a compiler chooses."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from emukern.api import Machine

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from cguests import build_cguest  # noqa: E402

#: what the program prints at every VL (its loops are VL-agnostic and every lane index is per
#: 128-bit segment), as qemu-aarch64 7.2 -cpu max printed it
WANT = """mul16 32c92bd9a52ee64d
mac32 96a35f49c25a7457
narrow 3d34e5cc5f4b0288
shll 261cf8ffde9c3375
complex 89dc2da6d1e84040
cdot 559f3b8c6de88beb
carry 515ab6927a1aad3a
long64 5974976f8417abac
autovec 504281b2a138e5ee
sad 21378289
"""


@pytest.fixture(scope="module")
def acle_elf():
    return build_cguest("sve2a_acle", "arm64", "-march=armv9-a")


@pytest.mark.parametrize("vl", [128, 256, 512])
def test_armv9_program_matches_qemu(acle_elf, vl):
    m = Machine(sve_vl=vl)
    r = m.load(acle_elf).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == f"vl {vl}\n" + WANT
    unit = m.kernel.cpus[0].sve2
    assert len(unit.by_name) >= 40, sorted(unit.by_name)
    if shutil.which("qemu-aarch64"):
        q = subprocess.run(["qemu-aarch64", "-cpu", f"max,sve{vl}=on", str(acle_elf)],
                           capture_output=True, timeout=120)
        assert q.stdout == r.stdout
