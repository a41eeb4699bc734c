"""fs.nr_open (kernel/resource.py, shown by kernel/fs/procfs.py) with
tests/kernel/data/nr_open_probe.c: the bounds a write must keep (64 .. 2147483584), RLIMIT_NOFILE
refused past it (EPERM), a descriptor above the old ceiling once both are raised, and
unshare(CLONE_FILES) failing with EMFILE when the copy of a shared table would pass a lowered
ceiling (core/unshare_test's case), then succeeding once the high descriptor is closed.  The
bounds and the unshare result are Linux 6.12's fs/file.c; the host kernel agrees on the bounds
(it refuses the rlimit raise to a container without CAP_SYS_RESOURCE, so it is no oracle for
the rest)."""
from __future__ import annotations

from pathlib import Path

import pytest

from cguests import run_probe_against


DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_nr_open_sysctl_and_unshare_emfile(cguest, arch):
    run_probe_against(DATA / "nr_open_probe.c", arch, DATA / "nr_open_probe.expected")
