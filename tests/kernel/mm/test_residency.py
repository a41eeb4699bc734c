"""Page residency (emukern/machine/memory.py page_states, kernel/fs/procfs.py smaps/pagemap/
status, kernel/syscalls/madvise.py, mlock.py) seen by tests/kernel/mm/residency_probe.c: one
8-page anonymous mapping through a touch, MADV_DONTNEED, MADV_POPULATE_WRITE/READ,
mlock2(MLOCK_ONFAULT), mlock, munlock and a fork, with the error cases of each call; then two
mappings made after mlockall(MCL_FUTURE) and mlockall(MCL_FUTURE | MCL_ONFAULT).

residency_probe.expected is emukern's output, the same on both arches.  residency_probe.linux-6.12
is what Debian's 6.12.117 kernels printed for it (`emukern compare --kernel debian-13-arm64` and
`debian-13-riscv64`, the same bytes on both): every line agrees but the PFN count, since the probe
runs as root there and pagemap shows a root reader the page frames, while emukern shows the PFN
as 0, as Linux does to a reader without CAP_SYS_ADMIN (it has no physical frames to give).  qemu-user passes /proc/self/smaps and pagemap through to the host's
kernel but implements neither madvise's advices nor mlock2, so only the steps it does carry
out (a touch, mlock, munlock) are compared with it."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from emukern.api import Machine

HERE = Path(__file__).parent
PROBE = HERE / "residency_probe.c"
EXPECTED = HERE / "residency_probe.expected"
REAL = HERE / "residency_probe.linux-6.12"
QEMU = {"riscv64": "qemu-riscv64", "arm64": "qemu-aarch64"}


def _fields(out: str) -> dict[str, dict[str, int]]:
    return {step: {k: int(v) for k, v in re.findall(r"(\w+)=(-?\d+)", rest)}
            for step, _, rest in (ln.partition(": ") for ln in out.splitlines()) if "=" in rest
            and not step == "sem"}


def _run(cguest, arch: str) -> str:
    r = Machine(arch=arch).load(cguest(PROBE, arch), []).run()
    assert r.exit_status == 0, r.message
    return r.stdout.decode()


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_residency_probe(cguest, arch):
    out = _run(cguest, arch)
    assert out == EXPECTED.read_text()
    f = _fields(out)
    assert f["fresh"]["present"] == f["fresh"]["rss"] == f["fresh"]["mincore"] == 0
    # two pages written, one read: the read maps the zero page (present, not in Rss, shared)
    assert (f["touched"]["present"], f["touched"]["exclusive"], f["touched"]["rss"]) == (3, 2, 8)
    # MADV_DONTNEED dropped the three; the two bytes read back as 0 map the zero page again
    assert (f["dontneed"]["present"], f["dontneed"]["rss"]) == (2, 0)
    assert (f["populate-write"]["rss"], f["populate-read"]["present"], f["populate-read"]["rss"]) == (16, 8, 16)
    # MLOCK_ONFAULT faults nothing in: Locked is what is there, VmLck the whole range
    assert {k: f["mlock-onfault"][k] for k in ("rss", "locked", "lo", "lf", "vmlck")} == \
        {"rss": 16, "locked": 16, "lo": 1, "lf": 1, "vmlck": 32}
    assert {k: f["mlock"][k] for k in ("rss", "locked", "lo", "lf", "vmlck")} == \
        {"rss": 32, "locked": 32, "lo": 1, "lf": 0, "vmlck": 32}
    assert f["munlock"]["locked"] == f["munlock"]["lo"] == f["munlock"]["vmlck"] == 0
    # after fork every page is shared by two (Pss half of Rss); the child's write makes one its own
    assert (f["child"]["exclusive"], f["child"]["rss"], f["child"]["pss"]) == (0, 32, 16)
    assert (f["child-written"]["exclusive"], f["child-written"]["private_dirty"],
            f["child-written"]["pss"]) == (1, 4, 18)
    # MCL_FUTURE: a new mapping comes locked and faulted in; with MCL_ONFAULT only what is touched
    assert {k: f["future"][k] for k in ("rss", "locked", "lo", "lf")} == {"rss": 32, "locked": 32, "lo": 1, "lf": 0}
    assert f["future-unlocked"]["lo"] == f["future-unlocked"]["vmlck"] == 0
    assert {k: f["future-onfault"][k] for k in ("present", "rss", "locked", "lo", "lf")} == \
        {"present": 1, "rss": 4, "locked": 4, "lo": 1, "lf": 1}
    assert "sem: populate_hole=-1 errno=12" in out and "sem: populate_write_ro=-1 errno=22" in out


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_what_qemu_user_carries_out_agrees(cguest, arch):
    if shutil.which(QEMU[arch]) is None:
        pytest.skip(f"{QEMU[arch]} (qemu-user) is not installed")
    q = subprocess.run([QEMU[arch], str(cguest(PROBE, arch))], capture_output=True, timeout=120)
    assert q.returncode == 0
    strip = lambda d: {k: v for k, v in d.items() if k != "pfn"}      # noqa: E731 (host root sees PFNs)
    mine, theirs = _fields(EXPECTED.read_text()), _fields(q.stdout.decode())
    for step in ("fresh", "touched", "mlock", "munlock"):
        assert strip(mine[step]) == strip(theirs[step]), step


def test_smaps_layout_and_rollup(cguest):
    """smaps's lines in show_smap's order and widths; smaps_rollup sums them under [rollup];
    status carries VmLck/VmRSS/RssAnon/RssFile/RssShmem."""
    src = HERE / "smaps_cat.c"
    r = Machine(arch="riscv64").load(cguest(src, "riscv64"), []).run()
    assert r.exit_status == 0, r.message
    smaps, _, rest = r.stdout.decode().partition("=== rollup\n")
    rollup, _, status = rest.partition("=== status\n")
    entry = smaps.split("\n")
    names = [ln.split(":")[0] for ln in entry[1:25]]
    assert names == ["Size", "KernelPageSize", "MMUPageSize", "Rss", "Pss", "Pss_Dirty", "Shared_Clean",
                     "Shared_Dirty", "Private_Clean", "Private_Dirty", "Referenced", "Anonymous", "KSM",
                     "LazyFree", "AnonHugePages", "ShmemPmdMapped", "FilePmdMapped", "Shared_Hugetlb",
                     "Private_Hugetlb", "Swap", "SwapPss", "Locked", "THPeligible", "VmFlags"]
    assert entry[1] == "Size:                  8 kB" and entry[19] == "Private_Hugetlb:       0 kB"
    assert entry[4] == "Rss:                   4 kB" and entry[24] == "VmFlags: rd wr mr mw me ac "
    assert rollup.splitlines()[0].endswith("[rollup]")
    assert [ln.split(":")[0] for ln in rollup.splitlines()[1:7]] == \
        ["Rss", "Pss", "Pss_Dirty", "Pss_Anon", "Pss_File", "Pss_Shmem"]
    for key in ("VmLck:", "VmRSS:", "RssAnon:", "RssFile:", "RssShmem:"):
        assert re.search(rf"^{key}\s+\d+ kB$", status, re.M), key


def test_dontneed_after_fork_reads_zero_in_later_forks():
    """A fork turns a private buffer into a view of a frozen snapshot; MADV_DONTNEED there must
    give zeros (not the snapshot's bytes) and no page, and so must a later fork's copy."""
    from emukern.machine.memory import (PAGE, PAGE_NONE, PAGE_OWN, PAGE_SHARED, PAGE_ZERO, AddressSpace, discard,
                                        page_states)
    mm = AddressSpace()
    base = 0x10000
    mm.map(base, 4 * PAGE, "rw-", "[anon]")
    mm.write(base, b"\xaa" * 4 * PAGE)
    child = mm.fork()
    m = mm.find(base)
    assert page_states(m, base, base + 4 * PAGE) == bytes([PAGE_SHARED]) * 4
    discard(m, base + PAGE, base + 2 * PAGE)
    assert page_states(m, base, base + 2 * PAGE) == bytes([PAGE_SHARED, PAGE_NONE])
    assert mm.read(base + PAGE, PAGE) == bytes(PAGE)
    assert page_states(m, base + PAGE, base + 2 * PAGE) == bytes([PAGE_ZERO])   # the read's zero page
    assert child.read(base + PAGE, PAGE) == b"\xaa" * PAGE              # the child's copy is its own
    mm.write(base + 2 * PAGE, b"\x55")
    assert page_states(m, base + 2 * PAGE, base + 3 * PAGE) == bytes([PAGE_OWN])
    grandchild = mm.fork()
    assert grandchild.read(base + PAGE, PAGE) == bytes(PAGE)            # not the snapshot's bytes
    assert grandchild.read(base, 1) == b"\xaa" and grandchild.read(base + 2 * PAGE, 1) == b"\x55"
    for a in (child, grandchild, mm):
        a.release()


def test_the_real_kernels_printed_the_same_but_the_pfns():
    pfn = re.compile(r" pfn=\d+")
    mine, real = EXPECTED.read_text().splitlines(), REAL.read_text().splitlines()
    assert [pfn.sub("", ln) for ln in mine] == [pfn.sub("", ln) for ln in real]
    # a root reader sees a frame for every present page; emukern shows none
    for ln in real:
        if " pfn=" in ln:
            assert re.search(r"pfn=(\d+)", ln)[1] == re.search(r"present=(\d+)", ln)[1]
