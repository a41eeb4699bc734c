"""Hostile-guest issue, item 15 (the descriptor parts): RLIMIT_NOFILE above 1024 is a limit the
descriptor table really follows (``dup2(1, 100000)`` works once the limit is raised), and past
the limit dup2 is EBADF, F_DUPFD EINVAL and a new descriptor EMFILE, as fs/file.c's do_dup2,
f_dupfd and alloc_fd answer.  qemu-riscv64 (the host's Linux) started with a 1024:1024 limit
prints the same first four lines; the rest raise the hard limit, which needs CAP_SYS_RESOURCE
this project's container does not give qemu, so they follow fs/file.c's reading
(do_dup2: newfd >= rlimit -> EBADF; f_dupfd: from >= rlimit -> EINVAL; alloc_fd: EMFILE)."""
from __future__ import annotations

import pytest

from emukern.api import Machine
from emukern.pytest_plugin import GUEST_ASM

EXPECTED = (GUEST_ASM / "c" / "hostile" / "fd_limits.expected").read_text()


@pytest.mark.parametrize("arch", ["riscv64", "arm64"])
def test_fd_limits_follow_rlimit_nofile(cprog, arch):
    r = Machine(arch=arch).load(cprog("fd_limits", arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == EXPECTED


ERRNOS = """O_PATH open ok: 1
read O_PATH: -1 EBADF
read 2^63: -1 EFAULT
read 2^47: -1 EFAULT
getrandom 2^31 into 8 KiB: 8192
getrandom unmapped: -1 EFAULT
getrandom 100: 100
"""


@pytest.mark.parametrize("arch", ["riscv64", "arm64"])
def test_read_and_getrandom_errnos(cprog, arch):
    """qemu-user prints these lines too except getrandom's 2**31 (qemu locks the whole buffer
    first: EFAULT); Linux's get_random_bytes_user cuts the request to INT_MAX and copies until
    the fault, returning the 8 KiB that landed."""
    r = Machine(arch=arch).load(cprog("fd_errnos", arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == ERRNOS


def test_getrandom_bytes_unchanged_up_to_256():
    # the first 256 bytes of a call are what the 256-byte cap gave before, so short requests
    # (every libc's and Python's seeds) see the same bytes
    from emukern.kernel.syscalls.random import _fill, _pattern
    for tid in (1, 7, 300):
        old = bytes((tid * 131 + i * 17 + 7) & 0xFF for i in range(256))
        assert _fill(_pattern(tid), 0, 256) == old
        assert _fill(_pattern(tid), 0, 1000)[256:512] == old
        assert _fill(_pattern(tid), 100, 50) == old[100:150]


@pytest.mark.parametrize("arch", ["riscv64", "arm64"])
def test_descriptors_are_charged_to_the_memory_limit(cprog, arch):
    """With RLIMIT_NOFILE raised to NR_OPEN, a process that fills its table (and forks a copy)
    meets the machine's memory limit (ENOMEM), not the host's: each descriptor is charged
    FdTable.FD_COST bytes, what it costs emukern's host.  Measured: 95k descriptors in 24 MiB,
    ~70 MiB peak host RSS for the whole `emukern run`, 5 s."""
    from emukern.kernel.files import FdTable
    r, m = None, Machine(arch=arch, mem_limit=24 << 20)
    m.load(cprog("fd_hog", arch), [])
    r = m.run()
    assert r.exit_status == 0, r.message
    words = r.stdout.decode().split()
    assert words[:2] == ["setrlimit", "0"] and words[4:] == ["errno", "ENOMEM", "fork", "ENOMEM"]
    assert 40_000 < int(words[3]) < (24 << 20) // FdTable.FD_COST
    assert m.kernel.mem.peak <= 24 << 20
