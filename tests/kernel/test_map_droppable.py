"""MAP_DROPPABLE (kernel/syscalls/mmap.py, kernel/mm/mm_struct.py, kernel/syscalls/madvise.py)
with tests/kernel/data/droppable_probe.c: EINVAL for a file or MAP_LOCKED, a fork child that sees
zeros while the parent keeps its bytes (VM_WIPEONFORK), MADV_DODUMP and MADV_KEEPONFORK refused,
and MADV_PAGEOUT dropping the pages.  The expected output is the same probe built for the host
and run under its real Linux kernel."""
from __future__ import annotations

from pathlib import Path

import pytest

from emukern.api import Machine

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_map_droppable_matches_linux(cguest, arch):
    r = Machine(arch=arch).load(cguest(DATA / "droppable_probe.c", arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == (DATA / "droppable_probe.expected").read_text()
