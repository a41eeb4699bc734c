"""Hostile-guest leftovers, item 1: pipe buffers are charged to the machine's memory limit.

Each pipe's queued bytes are charged a page at a time (Linux's __GFP_ACCOUNT buffer pages), so
1,000 pipes filled under a 32 MiB limit stop with ENOMEM (from write, then from pipe2's
descriptors) instead of growing the host's memory; closing them gives it all back.  The
F_SETPIPE_SZ/F_GETPIPE_SZ probe (guest_asm/c/hostile/pipe_size.c) prints what qemu-user's host
kernel prints, except for one line: the container's root has no CAP_SYS_RESOURCE, emukern's
root has every capability, so its 2 MiB pipe is allowed."""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from emukern.api import Machine

ARCHES = ("riscv64", "arm64")
QEMU = {"riscv64": "qemu-riscv64", "arm64": "qemu-aarch64"}
PIPE = 65536

SIZES = [
    "default size: 65536", "set 5000: 8192", "set 1: 4096", "write 16384 into 4096: 4096",
    "set 1 with a page queued: 4096", "set 16384: 16384", "write 8192 more: 8192",
    "shrink to 8192 with 12288 queued: -1 errno 16",
    "root: set 2 MiB (above pipe-max-size): 2097152",
    "set 3 GiB: -1 errno 22", "set on /dev/null: -1 errno 9", "get on /dev/null: -1 errno 9",
    "user: set 2 MiB: -1 errno 1", "user: set 1 MiB: 1048576",
    "user: set 1 MiB again (no growth): 1048576",
    "user: 1 MiB pipes before EPERM: 63 (errno 1)",
    "user: a new pipe past the soft limit: 8192", "user: grow it to 16384: -1 errno 1",
    "user: shrink it to 4096: 4096",
]


def _run(exe, argv, **opts):
    m = Machine(**opts)
    m.load(exe, [str(a) for a in argv])
    return m.run(), m


@pytest.mark.parametrize("arch", ARCHES)
def test_pipe_size_errnos(cprog, arch):
    r, m = _run(cprog("pipe_size", arch), [], arch=arch)
    assert r.exit_status == 0, r.message
    assert r.stdout.decode().splitlines() == SIZES


@pytest.mark.parametrize("arch", ARCHES)
def test_pipe_size_matches_qemu_user(cprog, arch):
    if shutil.which(QEMU[arch]) is None:
        pytest.skip(f"{QEMU[arch]} is not installed")
    out = subprocess.run([QEMU[arch], str(cprog("pipe_size", arch))], capture_output=True,
                         text=True, timeout=120).stdout.splitlines()
    if len(out) != len(SIZES) or out[0] != SIZES[0]:
        pytest.skip(f"the host cannot run the probe as root: {out[:1]}")
    # the one privileged line: the host's root may lack CAP_SYS_RESOURCE in a container
    priv = SIZES.index("root: set 2 MiB (above pipe-max-size): 2097152")
    assert out[priv] in (SIZES[priv], "root: set 2 MiB (above pipe-max-size): -1 errno 1")
    assert out[:priv] + out[priv + 1:] == SIZES[:priv] + SIZES[priv + 1:]


@pytest.mark.parametrize("arch", ARCHES)
def test_pipes_are_bounded_by_their_size(cprog, arch):
    r, m = _run(cprog("pipe_fill", arch), [20], arch=arch, mem_limit=512 << 20)
    assert r.stdout.decode().splitlines() == [
        "pipes 20: full (EAGAIN) 20, out of memory (ENOMEM) 0, other 0",
        f"queued {20 * PIPE} bytes", "pipe2 errno 0",
        f"after closing all: one pipe takes {PIPE} bytes, then errno 11"]


@pytest.mark.parametrize("arch", ARCHES)
def test_filled_pipes_meet_the_memory_limit(cprog, arch):
    r, m = _run(cprog("pipe_fill", arch), [1000], arch=arch, mem_limit=32 << 20)
    assert r.exit_status == 0, r.message
    lines = r.stdout.decode().splitlines()
    words = lines[0].replace(",", "").split()
    made, full, nomem = int(words[1].rstrip(":")), int(words[4]), int(words[9])
    queued = int(lines[1].split()[1])
    # the limit stops the writes (ENOMEM) and then pipe2's descriptors (ENOMEM)
    assert made < 1000 and full + nomem == made and nomem > 0
    assert lines[2] == "pipe2 errno 12"
    assert (32 - 8) << 20 < queued <= 32 << 20
    assert lines[3] == f"after closing all: one pipe takes {PIPE} bytes, then errno 11"
    assert m.kernel.mem.peak <= 32 << 20
    before = m.kernel.mem.used
    assert before < 4 << 20          # every pipe's pages were given back at the close


_RSS = """
import resource, sys
from emukern.api import Machine
r = Machine(arch="arm64", mem_limit=int(sys.argv[2]) << 20).load(sys.argv[1], [sys.argv[3]]).run()
assert r.exit_status == 0, r.message
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def test_host_memory_growth_is_bounded(cprog):
    """The host's peak RSS with 1,000 pipes filled under a 32 MiB limit grows by no more than
    the limit (plus emukern's own overhead) over a run with one pipe: not the 64 MiB that
    1,000 full pipes would hold."""
    exe = str(cprog("pipe_fill", "arm64"))

    def rss(pipes: int) -> int:
        out = subprocess.run([sys.executable, "-c", _RSS, exe, "32", str(pipes)], capture_output=True,
                             text=True, timeout=300, check=True)
        return int(out.stdout.split()[-1]) * 1024
    growth = rss(1000) - rss(1)
    assert growth < 48 << 20, growth
