"""AF_UNIX names and connections (emukern/kernel/net/unix.py, unix_bind.py, scm.py) with
guest_asm/c/af_unix_probe.c: bind/listen/connect/accept4 on path and abstract names, the
backlog, poll/epoll of a listener, fork and threads, SCM_RIGHTS, SCM_CREDENTIALS, bad input.

test_af_unix_probe.expected is what qemu-user printed on both arches (it passes these calls to
the host's Linux; the socket directory is never printed), with three changes:
- two MSG_CTRUNC lines (a 2-descriptor SCM_RIGHTS received into room for one, and an
  SCM_CREDENTIALS into 20 bytes of control buffer): qemu-user gives the host kernel a larger
  control buffer and cuts the translated result itself without the flag, where Linux's
  scm_detach_fds and put_cmsg set MSG_CTRUNC;
- the last line (sendmsg with msg_controllen 2^40: ENOBUFS, ____sys_sendmsg's INT_MAX check),
  which the probe leaves out under qemu-user (given a second argument) because qemu-user itself
  faults copying a 1 TiB control buffer.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from emukern.api import Machine
from emukern.pytest_plugin import GUEST_ASM

PROBE = GUEST_ASM / "c" / "af_unix_probe.c"
EXPECTED = Path(__file__).with_name("test_af_unix_probe.expected")


def _run(cguest, arch: str, tmp_path: Path):
    root = tmp_path / "root"
    (root / "tmp").mkdir(parents=True)
    r = Machine(arch=arch, root=str(root), root_rw=True).load(cguest(PROBE, arch), ["/tmp"]).run()
    return r, root


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_af_unix_probe_matches_linux(cguest, arch, tmp_path):
    r, root = _run(cguest, arch, tmp_path)
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == EXPECTED.read_text()
    # the socket inodes are in the root; the probe unlinked all but the seqpacket test's
    assert sorted(p.name for p in (root / "tmp").iterdir()) == []


def test_af_unix_probe_deterministic(cguest, tmp_path):
    a, _ = _run(cguest, "arm64", tmp_path / "a")
    b, _ = _run(cguest, "arm64", tmp_path / "b")
    assert (a.stdout, a.cycles) == (b.stdout, b.cycles)
    assert a.syscalls["accept4"] >= 1 and a.syscalls["bind"] >= 10


NSCD = r'''
#include <pwd.h>
#include <stdio.h>
int main(void) {
    struct passwd *p = getpwnam("nobody-here");    /* glibc asks nscd first: connect() */
    printf("%s\n", p ? "found" : "none");
    return 0;
}
'''


def test_nscd_probe_is_enoent(cguest, tmp_path):
    """glibc's nscd client connects to /var/run/nscd/socket before reading the files; with no
    such socket that is ENOENT and glibc goes on quietly."""
    src = tmp_path / "nscd.c"
    src.write_text(NSCD)
    m = Machine(arch="arm64")
    r = m.load(cguest(src, "arm64"), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout == b"none\n"
