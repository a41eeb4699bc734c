"""Hostile-guest issue, item 4 (epoll): every watch is charged to the machine's guest memory
(EPITEM_CHARGE bytes, its host cost), and a watch the limit refuses is ENOSPC, as Linux's
max_user_watches answers: n descriptors in n epoll instances can no longer make n^2 watches
on the host's memory.  Closing the instances gives the charge back."""
from __future__ import annotations

import pytest

from emukern.api import Machine
from emukern.kernel.syscalls.eventpoll import EPITEM_CHARGE


@pytest.mark.parametrize("arch", ["riscv64", "arm64"])
def test_epoll_watches_meet_the_memory_limit(cprog, arch):
    m = Machine(arch=arch, mem_limit=16 << 20)
    m.load(cprog("epoll_watches", arch), ["1000", "200"])
    r = m.run()
    assert r.exit_status == 0, r.message
    first, second = r.stdout.decode().splitlines()
    words = first.split()
    assert words[2:] == ["errno", "ENOSPC"]
    assert 10_000 < int(words[1]) < (16 << 20) // EPITEM_CHARGE
    assert second == "after close 200"
    assert m.kernel.mem.peak <= 16 << 20


@pytest.mark.parametrize("arch", ["riscv64", "arm64"])
def test_few_watches_unchanged(cprog, arch):
    r = Machine(arch=arch).load(cprog("epoll_watches", arch), ["4", "6"]).run()
    assert r.stdout.decode() == "watches 24 errno 0\nafter close 6\n"
