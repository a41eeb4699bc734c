"""The in-flight SCM_RIGHTS garbage collector (unix_gc in emukern/kernel/net/unix.py) with
guest_asm/c/af_unix_gc.c: 1000 times, a socket is sent (with 64 KiB) into its own receive queue
and both ends are closed.  Only the collector frees such a cycle; without it the queued bytes
stay charged and, under a 32 MiB limit, about half the sends fail with ENOBUFS (measured: 507
of 1000).  qemu-user (the host's Linux) prints the same line."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from emukern.api import Machine

LINE = "cycles 1000, failed sends 0 (first errno 0)\n"


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_a_socket_sent_over_itself_then_closed_is_freed(cguest, arch):
    m = Machine(arch=arch, mem_limit=32 << 20).load(cguest("af_unix_gc", arch), [])
    r = m.run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == LINE
    assert m.kernel.mem.used < 4 << 20          # (not 1000 x 64 KiB still charged)


def test_af_unix_gc_under_qemu_user(cguest):
    if shutil.which("qemu-aarch64") is None:
        pytest.skip("qemu-aarch64 (qemu-user) is not installed")
    q = subprocess.run(["qemu-aarch64", str(cguest("af_unix_gc", "arm64"))], capture_output=True, timeout=120)
    assert q.stdout.decode() == LINE
