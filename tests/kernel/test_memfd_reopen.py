"""A memfd reopened through /proc/self/fd/N (kernel/fs/procfs.py's fd links, kernel/fs/vfs.py's
jump, kernel/mm/vma.py's MemfdReopened) with tests/kernel/data/memfd_reopen_probe.c: the same
inode with its own position, writes and shared mappings seen through both, seals added on one
honoured on the other, O_TRUNC refused under F_SEAL_SHRINK and emptying an unsealed one, a
read-only description that cannot write, and the pages kept while any description is open.  The
expected output is the same probe built for the host and run under its real Linux kernel."""
from __future__ import annotations

from pathlib import Path

import pytest

from cguests import run_probe_against


DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_memfd_reopen_matches_linux(cguest, arch):
    run_probe_against(DATA / "memfd_reopen_probe.c", arch, DATA / "memfd_reopen_probe.expected")
