"""AF_UNIX queued bytes are charged to the machine's memory limit (emukern/kernel/net/unix.py:
alloc_skb/free_skb), with guest_asm/c/af_unix_mem.c: 500 socketpairs, each filled with
non-blocking sends.  Under a limit too small for 500 full buffers (212,992 bytes each, as
Linux's default sk_sndbuf) the later ones stop with ENOBUFS instead of growing host memory, and
closing the sockets gives the memory back."""
from __future__ import annotations

import subprocess
import sys

import pytest

from emukern.api import Machine

PER_PAIR = 212992          # net.core.wmem_default: what a full stream socket holds


def _lines(cguest, limit_mib: int, pairs: int = 500) -> list[str]:
    r = Machine(arch="arm64", mem_limit=limit_mib << 20).load(cguest("af_unix_mem", "arm64"), [str(pairs)]).run()
    assert r.exit_status == 0, r.message
    return r.stdout.decode().splitlines()


def test_each_socket_is_bounded_by_its_sndbuf(cguest):
    lines = _lines(cguest, 512, 20)
    assert lines == ["pairs 20: full (EAGAIN) 20, out of memory (ENOBUFS) 0, other 0",
                     f"queued {20 * PER_PAIR} bytes ({PER_PAIR} per pair)",
                     "socketpair errno 0",
                     f"after closing all: one pair takes {PER_PAIR} bytes, then errno 11"]


@pytest.mark.parametrize("limit_mib", [32, 64])
def test_all_sockets_are_bounded_by_the_memory_limit(cguest, limit_mib):
    lines = _lines(cguest, limit_mib)
    words = lines[0].replace(",", "").split()
    made, full, nobufs = int(words[1].rstrip(":")), int(words[4]), int(words[9])
    queued = int(lines[1].split()[1])
    # the limit stops the sends (ENOBUFS) or, once the sockets' buffers took it all, the next
    # socketpair's descriptors (ENOMEM): either way the queued bytes stay under it
    assert full + nobufs == made and (nobufs > 0 or lines[2] == "socketpair errno 12")
    assert lines[2] in ("socketpair errno 0", "socketpair errno 12")
    assert (limit_mib - 8) << 20 < queued <= limit_mib << 20
    assert lines[3] == f"after closing all: one pair takes {PER_PAIR} bytes, then errno 11"


_RSS = """
import resource, sys
from emukern.api import Machine
r = Machine(arch="arm64", mem_limit=int(sys.argv[2]) << 20).load(sys.argv[1], [sys.argv[3]]).run()
assert r.exit_status == 0, r.message
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def test_host_memory_growth_is_bounded(cguest):
    """The host process's peak RSS with 500 filled pairs under a 24 MiB limit stays within that
    limit (plus emukern's own per-byte overhead) of a run with 1 pair: not the 106 MB that 500
    full buffers would take."""
    exe = str(cguest("af_unix_mem", "arm64"))

    def rss(pairs: int) -> int:
        out = subprocess.run([sys.executable, "-c", _RSS, exe, "24", str(pairs)], capture_output=True,
                             text=True, timeout=300, check=True)
        return int(out.stdout.split()[-1]) * 1024
    growth = rss(500) - rss(1)
    assert growth < 24 * 2 << 20, growth
