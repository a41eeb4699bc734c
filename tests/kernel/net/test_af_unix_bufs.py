"""SO_SNDBUF/SO_RCVBUF and their FORCE forms (sk_setsockopt): doubled, the plain ones clamped to
net.core.wmem_max/rmem_max, the FORCE ones (root only) to INT_MAX / 2 before doubling, so
getsockopt reports 2147483646 at most (Linux 6.12 net/core/sock.c).  qemu-user on the
development host printed the same FORCE lines; its plain-option lines differ only because that
host raised net.core.wmem_max to 4194304 (emukern keeps Linux's default, 212992)."""
from __future__ import annotations

import pytest

from emukern.api import Machine

SRC = r'''
#include <stdio.h>
#include <sys/socket.h>
static void show(int s, int opt, int val) {
    int got; socklen_t l = sizeof got;
    int r = setsockopt(s, SOL_SOCKET, opt, &val, sizeof val);
    getsockopt(s, SOL_SOCKET, opt == SO_SNDBUFFORCE ? SO_SNDBUF : opt == SO_RCVBUFFORCE ? SO_RCVBUF : opt, &got, &l);
    printf("%d %d -> %d %d\n", opt, val, r, got);
}
int main(void) {
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    show(s, SO_SNDBUF, 1000000); show(s, SO_SNDBUF, -1); show(s, SO_SNDBUF, 1);
    show(s, SO_SNDBUFFORCE, 0x7fffffff); show(s, SO_SNDBUFFORCE, -5);
    show(s, SO_RCVBUF, 4096); show(s, SO_RCVBUFFORCE, 0x7fffffff);
    return 0;
}
'''


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_buffer_sizes_clamped(cguest, arch, tmp_path):
    src = tmp_path / "bufs.c"
    src.write_text(SRC)
    r = Machine(arch=arch).load(cguest(src, arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == (
        "7 1000000 -> 0 425984\n7 -1 -> 0 425984\n7 1 -> 0 4608\n"
        "32 2147483647 -> 0 2147483646\n32 -5 -> 0 4608\n"
        "8 4096 -> 0 8192\n33 2147483647 -> 0 2147483646\n")
