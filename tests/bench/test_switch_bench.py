"""emukern bench's switch figures (issue 30): the rows exist with both contenders, tiny counts,
never a timed assertion."""
from __future__ import annotations

import shutil

import pytest

from emukern.bench import selfbench as S


def test_switch_rows_quick() -> None:
    if shutil.which("aarch64-linux-gnu-gcc") is None or shutil.which("riscv64-linux-gnu-gcc") is None:
        pytest.skip("the Debian cross compilers are not installed")
    res = S.measure(quick=True, reps=1, only=["switch"])
    figs = {f["key"]: f for f in res["figures"]}
    for arch in S.ARCHES:
        for key in ("switch_proc", "switch_thread", "fork"):
            f = figs[f"{arch}.{key}"]
            assert f["unit"] == "µs"
            assert f["contenders"]["emukern"]["n"] == 1
            assert "qemu-user" in f["contenders"]
