"""One quick round of a bench group, for the tests that check its rows."""
from __future__ import annotations

import shutil
from typing import Any

import pytest

from emukern.bench import selfbench as S


def quick_figures(group: str) -> dict[str, dict[str, Any]]:
    """``emukern bench --quick --reps 1 --only GROUP``'s figures by key; skips the test without
    the Debian cross compilers (the switch guest is C, built for both architectures)."""
    if shutil.which("aarch64-linux-gnu-gcc") is None or shutil.which("riscv64-linux-gnu-gcc") is None:
        pytest.skip("the Debian cross compilers are not installed")
    res = S.measure(quick=True, reps=1, only=[group])
    return {f["key"]: f for f in res["figures"]}
