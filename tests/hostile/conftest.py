"""Hostile-guest tests: C guests from guest_asm/c/hostile built with the Debian cross compilers
(skipped when they are missing), on both architectures."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from emukern.pytest_plugin import GUEST_ASM

CC = {"riscv64": "riscv64-linux-gnu-gcc", "arm64": "aarch64-linux-gnu-gcc"}
ARCHES = list(CC)
HOSTILE = GUEST_ASM / "c" / "hostile"


@pytest.fixture(scope="session")
def cprog(cguest) -> Callable[[str, str], Path]:
    """cprog(name, arch) -> a static ELF of guest_asm/c/hostile/<name>.c (built once, shared)."""
    return lambda name, arch: cguest(HOSTILE / f"{name}.c", arch)


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
