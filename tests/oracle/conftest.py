"""Shared helpers for the oracle tests: the C guests (built with Debian's cross GCC, cached).

Tests marked ``linux`` boot real kernels under qemu-system (tens of seconds per kernel); they run
when EMUKERN_LINUX_TESTS=1 (what .ci/run sets for its real-kernel step) and are skipped otherwise,
so the everyday suite stays fast.  Without qemu-system or the kernel packages they skip anyway.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from cguests import build_cguest

GUESTS = Path(__file__).resolve().parent / "guests"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("EMUKERN_LINUX_TESTS") == "1":
        return
    skip = pytest.mark.skip(reason="boots real kernels: set EMUKERN_LINUX_TESTS=1 (.ci/run does)")
    for item in items:
        if item.get_closest_marker("linux") is not None:
            item.add_marker(skip)


def build_c_guest(name: str, arch: str) -> Path:
    """tests/oracle/guests/<name>.c as a static ELF for ``arch`` (skips without the compiler)."""
    return build_cguest(GUESTS / f"{name}.c", arch, "-Wall")
