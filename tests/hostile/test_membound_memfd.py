"""Hostile-guest issue, item 3: memfd is sparse, as Linux's shmem is.  ``ftruncate(memfd,
2**40 - 1)`` used to grow a Python bytearray to a terabyte (MemoryError in emukern, or host
memory outside --mem-limit); now only written pages hold memory, each charged to the machine's
guest memory limit, and a write past the limit is short, then ENOMEM."""
from __future__ import annotations

import resource
import tracemalloc

import pytest

from emukern.api import Machine

ARCHES = ("riscv64", "arm64")
FIRST = ["ftruncate: 0", "pwrite: 4096", f"size: {(1 << 40) - 1}", "hole read: 4096 zeros 1",
         "page read: 4096 same 1", "read at end: 0", "mmap: x 0"]


def _run(exe, argv, **opts):
    m = Machine(**opts)
    m.load(exe, [str(a) for a in argv])
    return m.run(), m


@pytest.mark.parametrize("arch", ARCHES)
def test_terabyte_memfd_costs_one_page(cprog, arch):
    exe = cprog("memfd_huge", arch)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    try:
        r, m = _run(exe, [])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0
    assert r.exit_status == 0, r.message
    assert r.stdout.decode().splitlines() == FIRST
    # the 1 TiB file holds one page; Python's allocations for the whole run (ELF, the mapping's
    # copy of the written page, the trap bookkeeping) stay a few MiB, and so does the peak RSS
    assert peak < 16 << 20, peak
    assert grown_kib < 64 << 10, grown_kib


@pytest.mark.parametrize("arch", ARCHES)
def test_memfd_pages_are_charged_to_the_machine_limit(cprog, arch):
    # 64 MiB machine: the pages fill what the program's own mappings leave, the write past the
    # limit fails with ENOMEM (12), and a shrink gives the charge back
    r, m = _run(cprog("memfd_huge", arch), [1 << 20], mem_limit=64 << 20)
    assert r.exit_status == 0, r.message
    lines = r.stdout.decode().splitlines()
    assert lines[:len(FIRST)] == FIRST
    written = int(lines[len(FIRST)].split()[2])
    assert 1000 < written < (64 << 20) // 4096
    assert lines[len(FIRST)] == f"pages written: {written} last -1 errno 12"
    assert lines[len(FIRST) + 1:] == ["shrink: 0", f"after shrink: {written}"]
    assert m.kernel.mem.peak <= 64 << 20


@pytest.mark.parametrize("arch", ARCHES)
def test_memfd_close_uncharges(cprog, arch):
    # the pages go back to the pool with the last descriptor: a run that wrote 100 more pages
    # ends with the same charge as one that wrote none
    exe = cprog("memfd_huge", arch)
    r0, m0 = _run(exe, [], mem_limit=64 << 20)
    r, m = _run(exe, [100], mem_limit=64 << 20)
    assert r.exit_status == 0, r.message
    assert r.stdout.decode().splitlines()[-3] == "pages written: 100 last 4096 errno 0"
    assert m.kernel.mem.used == m0.kernel.mem.used
    assert m.kernel.mem.peak >= m0.kernel.mem.peak + 100 * 4096
