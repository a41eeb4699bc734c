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
