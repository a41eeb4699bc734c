"""AF_UNIX sockets (emukern/kernel/net/unix.py) with tests/oracle/guests/unix_socket_probe.c,
whose .expected is what qemu-user (the host's Linux) printed on both arches; the probe is also
in the real-kernel oracle lists (tests/oracle/test_oracle_real_kernels.py, case unix_socket)."""
from __future__ import annotations

from pathlib import Path

import pytest

from emukern.api import Machine

PROBE = Path(__file__).resolve().parents[2] / "oracle" / "guests" / "unix_socket_probe.c"

PTHREAD_PAIR = r'''
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <poll.h>
#include <unistd.h>
#include <errno.h>
static int sv[2];
static void *echo(void *a) {
    char b[64]; int n;
    while ((n = recv(sv[1], b, sizeof b, 0)) > 0) send(sv[1], b, n, 0);
    return 0;
}
int main(void) {
    pthread_t t; char b[64];
    socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv);
    pthread_create(&t, 0, echo, 0);
    for (int i = 0; i < 4; i++) {
        int n = snprintf(b, sizeof b, "msg-%d", i);
        send(sv[0], b, n, 0);
        struct pollfd p = { sv[0], POLLIN, 0 };
        int r = poll(&p, 1, -1);
        n = recv(sv[0], b, sizeof b, 0);
        printf("%d %x %.*s\n", r, p.revents, n, b);
    }
    shutdown(sv[0], SHUT_WR);
    pthread_join(t, 0);
    printf("joined, recv, peer not shut down: %zd\n", recv(sv[0], b, 1, MSG_DONTWAIT));
    printf("bad type %d %d, inet %d %d\n", socket(AF_UNIX, 99, 0), errno,
           socket(2, SOCK_STREAM, 0), errno);
    return 0;
}
'''


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_unix_socket_probe_matches_linux(cguest, arch):
    r = Machine(arch=arch).load(cguest(PROBE, arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == PROBE.with_suffix(".expected").read_text()


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_unix_seqpacket_between_threads(cguest, arch, tmp_path):
    src = tmp_path / "unix_pthread_pair.c"
    src.write_text(PTHREAD_PAIR)
    r = Machine(arch=arch).load(cguest(src, arch, "-pthread"), []).run()
    assert r.exit_status == 0, r.message
    # qemu-user agrees up to the last line, where it rewrites socket types and forwards AF_INET
    # to the host; Linux: socket(AF_UNIX, 99) fails __sys_socket's flag check (EINVAL) and
    # AF_INET is not built into emukern (EAFNOSUPPORT)
    assert r.stdout.decode() == "".join(f"1 1 msg-{i}\n" for i in range(4)) + \
        "joined, recv, peer not shut down: -1\nbad type -1 22, inet -1 97\n"


def test_unix_socket_deterministic(cguest):
    exe = cguest(PROBE, "arm64")
    a, b = (Machine(arch="arm64").load(exe, []).run() for _ in range(2))
    assert (a.stdout, a.cycles) == (b.stdout, b.cycles)
    assert a.syscalls["socketpair"] == 6
