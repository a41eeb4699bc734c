"""/proc/version and /proc/PID/mem (kernel/fs/procfs.py) with tests/kernel/data/proc_mem_probe.c:
the banner, FOLL_FORCE writes into a read-only private page, reads of PROT_NONE pages across a
page boundary, the refused write into a read-only shared page, short reads at a hole and EIO
at one, lseek+write, and another process's memory.  The expected output is what the same probe
prints built for the host and run under a real Linux kernel."""
from __future__ import annotations

from pathlib import Path

import pytest

from cguests import run_probe_against


DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_proc_version_and_mem_match_linux(cguest, arch):
    run_probe_against(DATA / "proc_mem_probe.c", arch, DATA / "proc_mem_probe.expected")
