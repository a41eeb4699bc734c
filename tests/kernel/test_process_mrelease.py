"""process_mrelease (kernel/syscalls/oom_kill.py) with tests/kernel/data/mrelease_probe.c: EBADF
for a bad descriptor or one that is no pidfd, EINVAL for flags and for a live process, success
for a process with SIGKILL pending, ESRCH once it is reaped.  The host's real kernel prints the
same (its "killed" line is a race there, deterministic here)."""
from __future__ import annotations

from pathlib import Path

import pytest

from emukern.api import Machine

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_process_mrelease_matches_linux(cguest, arch):
    r = Machine(arch=arch).load(cguest(DATA / "mrelease_probe.c", arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == (DATA / "mrelease_probe.expected").read_text()
    assert r.syscalls["process_mrelease"] == 6
