"""Issue 14's target on real kernels, in CI: a small set of Linux's selftests under a real Debian
kernel and under emukern's matching --kernel profile, one boot per architecture.

Every test of the set passes on the real kernel (checked: a broken oracle cannot agree silently)
and gets the same verdict under emukern.  `emukern selftests --real KERNEL` is the full table;
this is the part CI pays for (two boots).  Needs the linux-source in ~/.cache/emukern (the
selftests CI step fetches it), the cross compilers and qemu-system; skips without them.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from emukern.cli import main

SUBSETS = {
    "debian-13-arm64": ["fp/sve-probe-vls", "fp/vec-syscfg", "fp/vlset", "fp/sve-test", "abi/syscall-abi",
                        "signal/sve_regs", "signal/fake_sigreturn_sve_change_vl"],
    "debian-13-riscv64": ["vector/v_initval_nolibc", "vector/vstate_prctl", "sigreturn/sigreturn",
                          "hwprobe/hwprobe", "mm/mmap_default"],
}


@pytest.fixture(scope="module")
def have_source() -> None:
    from emukern.selftests.source import source_cache
    if not any(source_cache().glob("*/.emukern-unpacked")):
        pytest.skip("linux-source-6.12 is not in the cache (run `emukern selftests` once)")


@pytest.mark.linux
@pytest.mark.parametrize("kernel", list(SUBSETS))
def test_selftests_agree_with_the_real_kernel(have_source: None, kernel: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    from emukern.oracle.kernels import PROFILES
    p = PROFILES[kernel]
    for tool in (p.qemu, "aarch64-linux-gnu-gcc" if p.arch == "arm64" else "riscv64-linux-gnu-gcc"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
    out = tmp_path / "out.json"
    rc = main(["selftests", "--real", kernel, "--vl", "256", "--only", ",".join(SUBSETS[kernel]),
               "--json", str(out), "--real-file", str(tmp_path / "real.json"), "--record"])
    text = capsys.readouterr().out
    doc = json.loads(out.read_text())
    runs = doc["runs"]
    assert len(runs) == len(SUBSETS[kernel]), text
    for r in runs:
        assert r["real"] == "pass", (r["test"], r["real"], text)          # the oracle really ran it
        assert r["verdict"] == r["real"], (r["test"], r["cause"], text)
    assert rc == 0, text
    assert "REAL KERNEL PASSES" not in text
    # --record wrote what the boot measured, named by the kernel it booted
    rec = json.loads((tmp_path / "real.json").read_text())["kernels"][kernel]
    assert rec["release"] == doc["real"][0]["release"] and rec["release"].startswith("6.12")
    assert set(rec["vls"]["256"]["tests"]) == {r["test"] for r in runs}
