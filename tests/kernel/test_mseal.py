"""mseal (kernel/syscalls/mseal.py, kernel/mm/seal.py) with tests/kernel/data/mseal_probe.c: the
argument checks (flags, alignment, a wrapping or zero length, a hole: ENOMEM with nothing sealed),
the vma split a partial seal makes in /proc/self/maps, and EPERM from munmap, mprotect, mremap
(shrink, move, onto a sealed target), mmap(MAP_FIXED) and a discarding madvise of a read-only
anonymous mapping, while a non-discarding advice and a writable mapping are allowed; fork keeps
the seal.  The expected output is the same probe built for the host and run under its real Linux
kernel (6.18; its mseal answers these cases as 6.12 does)."""
from __future__ import annotations

from pathlib import Path

import pytest

from cguests import run_probe_against


DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_mseal_matches_linux(cguest, arch):
    r = run_probe_against(DATA / "mseal_probe.c", arch, DATA / "mseal_probe.expected")
    assert r.unknown_syscalls == {}
