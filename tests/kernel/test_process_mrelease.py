"""process_mrelease (kernel/syscalls/oom_kill.py) with tests/kernel/data/mrelease_probe.c: EBADF
for a bad descriptor or one that is no pidfd, EINVAL for flags and for a live process, success
for a process with SIGKILL pending, ESRCH once it is reaped.  The host's real kernel prints the
same (its "killed" line is a race there, deterministic here)."""
from __future__ import annotations

from pathlib import Path

import pytest

from cguests import run_probe_against


DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_process_mrelease_matches_linux(cguest, arch):
    r = run_probe_against(DATA / "mrelease_probe.c", arch, DATA / "mrelease_probe.expected")
    assert r.syscalls["process_mrelease"] == 6
