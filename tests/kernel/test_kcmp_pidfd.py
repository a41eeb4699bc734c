"""kcmp (syscalls/kcmp.py), unshare and the mount family (syscalls/nsproxy.py), CLONE_PIDFD and
waitid(P_PIDFD) (syscalls/fork.py, signal/jobctl.py), PR_SET_MDWE / PR_SET_DUMPABLE /
PR_SET_PDEATHSIG (syscalls/sys.py) and PTRACE_PEEKSIGINFO (signal/ptrace.py), through
guest_asm/c/kcmp_pidfd_probe.c on both architectures.

The expected lines are Linux 6.12's answers for a root caller, its namespace and mount calls
made by a child that gave up root (no CAP_SYS_ADMIN: unshare of a namespace and every mount
call are EPERM; tests/kernel/test_pidns.py covers root's), read off kernel/kcmp.c, kernel/fork.c (ksys_unshare, pidfd_prepare's
put_user before the child runs, clone's CLONE_PIDFD|CLONE_PARENT_SETTID EINVAL), kernel/exit.c
(P_PIDFD, EAGAIN for an O_NONBLOCK pidfd), kernel/sys.c (prctl_set_mdwe, PR_SET_PDEATHSIG's
valid_signal, PR_SET_DUMPABLE 0/1 only), mm/mmap.c/mprotect.c (map_deny_write_exec) and
kernel/ptrace.c (ptrace_peek_siginfo).  qemu-user is no oracle here: it has no clone3 and no
P_PIDFD, and as root on the host its unshare and mount calls succeed."""
from __future__ import annotations

from pathlib import Path

import pytest

from emukern.api import Machine

EXPECTED = (Path(__file__).parent / "data" / "kcmp_pidfd_probe.expected").read_text()


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_kcmp_pidfd_probe_matches_linux(cguest, arch):
    r = Machine(arch=arch).load(cguest("kcmp_pidfd_probe", arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == EXPECTED
    assert r.unknown_syscalls == {}


def test_pdeathsig_kills_the_orphan(cguest):
    """The grandchild asked for SIGKILL at its parent's exit: it never prints that it survived."""
    r = Machine(arch="arm64").load(cguest("kcmp_pidfd_probe", "arm64"), []).run()
    assert b"survived" not in r.stdout and b"after the grandchild's second" in r.stdout
