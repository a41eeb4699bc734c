"""Hostile-guest tests: C guests from guest_asm/c/hostile built with the Debian cross compilers
(skipped when they are missing), on both architectures."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Callable

import pytest

from emukern.pytest_plugin import GUEST_ASM

CC = {"riscv64": "riscv64-linux-gnu-gcc", "arm64": "aarch64-linux-gnu-gcc"}
ARCHES = list(CC)
HOSTILE = GUEST_ASM / "c" / "hostile"


@pytest.fixture(scope="session")
def cprog(tmp_path_factory) -> Callable[[str, str], Path]:
    """cprog(name, arch) -> a static ELF of guest_asm/c/hostile/<name>.c, built once per session."""
    out_dir = tmp_path_factory.mktemp("hostile")
    built: dict[tuple[str, str], Path] = {}

    def build(name: str, arch: str) -> Path:
        key = (name, arch)
        if key not in built:
            cc = CC[arch]
            if shutil.which(cc) is None:
                pytest.skip(f"{cc} (Debian gcc cross compiler + glibc) is not installed")
            exe = out_dir / f"{name}-{arch}"
            res = subprocess.run([cc, "-O2", "-static", "-o", str(exe), str(HOSTILE / f"{name}.c")],
                                 capture_output=True, text=True)
            assert res.returncode == 0, res.stderr
            built[key] = exe
        return built[key]
    return build


@pytest.fixture
def watchdog():
    """watchdog(seconds): a hang (the old 100 % CPU spin) fails the test instead of blocking CI."""
    import signal

    def expired(signum, frame):
        raise TimeoutError("the run did not finish: emukern hung")

    old = signal.signal(signal.SIGALRM, expired)

    def arm(seconds: float) -> None:
        signal.setitimer(signal.ITIMER_REAL, seconds)
    yield arm
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, old)
