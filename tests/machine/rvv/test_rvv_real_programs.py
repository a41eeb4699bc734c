"""The policy study's real RVV programs (zlib's minigzip and bzip2, every source built with V by
LLVM, see emukern.bench.rvv_programs) print the same bytes under emukern as under
``qemu-riscv64 -cpu rv64,v=true,vlen=N``, and those bytes are a correct round trip of the input.
Skips when the builds are not cached (no fetching or compiling here) or qemu is missing."""
from __future__ import annotations

import bz2
import gzip
import shutil
import subprocess

import pytest

from emukern.api import Machine
from emukern.bench import rvv_programs
from emukern.bench.policy_study import _text

QEMU = shutil.which("qemu-riscv64")
pytestmark = [pytest.mark.qemu,
              pytest.mark.skipif(QEMU is None, reason="qemu-riscv64 is not installed")]


@pytest.fixture(scope="module")
def bins(tmp_path_factory: pytest.TempPathFactory) -> dict:
    mp = pytest.MonkeyPatch()
    mp.setattr(rvv_programs, "FETCH", False)
    try:
        return rvv_programs.build()
    except rvv_programs.Unavailable as exc:
        pytest.skip(str(exc))
    finally:
        mp.undo()


TEXT = _text("quick")[:24000]           # 1,000 lines: enough for every vector loop
CASES = {
    "minigzip -6": ("minigzip", ["-6"], TEXT, lambda out: gzip.decompress(out) == TEXT),
    "minigzip -d": ("minigzip", ["-d"], gzip.compress(TEXT, 6, mtime=0), lambda out: out == TEXT),
    "bzip2 -9": ("bzip2", ["-9c"], TEXT, lambda out: bz2.decompress(out) == TEXT),
    "bzip2 -d": ("bzip2", ["-dc"], bz2.compress(TEXT, 9), lambda out: out == TEXT),
}


@pytest.mark.parametrize("vlen", (128, 256))
@pytest.mark.parametrize("case", sorted(CASES))
def test_program_matches_qemu(bins: dict, case: str, vlen: int) -> None:
    prog, argv, stdin, good = CASES[case]
    elf = bins[prog]
    q = subprocess.run([QEMU, "-cpu", f"rv64,v=true,vlen={vlen},elen=64,vext_spec=v1.0", str(elf), *argv],
                       input=stdin, capture_output=True, timeout=300)
    assert q.returncode == 0, q.stderr[-300:]
    m = Machine(arch="riscv64", vlen=vlen, max_insns=None, stdin=stdin)
    m.load(elf, argv)
    r = m.run()
    assert r.exit_status == 0, r.stderr[-300:]
    assert r.stdout == q.stdout
    assert good(r.stdout)
    assert m.kernel is not None
    assert sum(int(getattr(c, "vector_insns", 0)) for c in m.kernel.cpus) > 10_000
