"""Shared helpers for the oracle tests: the C guests (built with Debian's cross GCC, cached).

Tests marked ``linux`` boot real kernels under qemu-system (tens of seconds per kernel); they run
when EMUKERN_LINUX_TESTS=1 (what .ci/run sets for its real-kernel step) and are skipped otherwise,
so the everyday suite stays fast.  Without qemu-system or the kernel packages they skip anyway.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from emukern.debian import cache_root

GUESTS = Path(__file__).resolve().parent / "guests"
CC = {"arm64": "aarch64-linux-gnu-gcc", "riscv64": "riscv64-linux-gnu-gcc"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("EMUKERN_LINUX_TESTS") == "1":
        return
    skip = pytest.mark.skip(reason="boots real kernels: set EMUKERN_LINUX_TESTS=1 (.ci/run does)")
    for item in items:
        if item.get_closest_marker("linux") is not None:
            item.add_marker(skip)


def build_c_guest(name: str, arch: str) -> Path:
    """tests/oracle/guests/<name>.c as a static ELF for ``arch`` (skips without the compiler)."""
    cc = shutil.which(CC[arch])
    if cc is None:
        pytest.skip(f"{CC[arch]} (Debian's cross GCC + glibc) is not installed")
    src = GUESTS / f"{name}.c"
    digest = hashlib.sha256(src.read_bytes() + arch.encode()).hexdigest()[:16]
    out = cache_root() / "oracle" / "guests" / f"{name}-{arch}-{digest}"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + f".{os.getpid()}.tmp")
        r = subprocess.run([cc, "-static", "-O2", "-Wall", "-o", str(tmp), str(src)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            pytest.fail(f"{CC[arch]} could not build {src.name}:\n{r.stderr}")
        tmp.replace(out)
    return out
