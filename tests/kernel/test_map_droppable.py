"""MAP_DROPPABLE (kernel/syscalls/mmap.py, kernel/mm/mm_struct.py, kernel/syscalls/madvise.py)
with tests/kernel/data/droppable_probe.c: EINVAL for a file or MAP_LOCKED, a fork child that sees
zeros while the parent keeps its bytes (VM_WIPEONFORK), MADV_DODUMP and MADV_KEEPONFORK refused,
and MADV_PAGEOUT dropping the pages.  The expected output is the same probe built for the host
and run under its real Linux kernel."""
from __future__ import annotations

from pathlib import Path

import pytest

from cguests import run_probe_against


DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_map_droppable_matches_linux(cguest, arch):
    run_probe_against(DATA / "droppable_probe.c", arch, DATA / "droppable_probe.expected")
