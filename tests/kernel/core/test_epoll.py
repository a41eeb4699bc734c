"""epoll_create1 / epoll_ctl / epoll_pwait and eventfd2 (emukern/kernel/fs/poll.py), as fp-stress
uses them: a GCC + glibc program checks readiness of pipes and eventfds, a blocking wait woken by
a child's write, a timeout, nesting, hang-up and the errors; emukern's output must equal the host
kernel's under qemu-user."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from emukern.api import Machine

CC = {"riscv64": "riscv64-linux-gnu-gcc", "arm64": "aarch64-linux-gnu-gcc"}
QEMU = {"riscv64": "qemu-riscv64", "arm64": "qemu-aarch64"}


def _elf(cguest, arch):
    """epoll_pipes.c built for ``arch`` (skips without the cross compiler)."""
    return cguest("epoll_pipes", arch)


@pytest.mark.parametrize("arch", list(CC))
@pytest.mark.parametrize("cpus", [1, 2])
def test_epoll_pipes_eventfd(cguest, arch, cpus):
    r = Machine(cpus=cpus).load(_elf(cguest, arch)).run()
    assert r.exit_status == 0, (r.message, r.fault)
    out = r.stdout.decode()
    assert not r.unknown_syscalls
    for line in ("pipe readable: 1 [1:0x1]",
                 "pipe + eventfd: 2 [1:0x1] [2:0x5]",            # eventfd: IN|OUT
                 "eventfd value 3", "eventfd drained: 2 [1:0x1] [2:0x4]",
                 "blocking wait: 1 [1:0x1]", "timeout 20 ms: 0",
                 "nested ready: 1 [7:0x1]", "loop: -1 Too many levels of symbolic links",
                 "writer closed: 1 [1:0x10]",                    # EPOLLHUP
                 "sem value 1", "sem read empty: -1 Resource temporarily unavailable",
                 "after close: 0"):
        assert line + "\n" in out, line
    # the infinite wait really slept (until the child's write 10 ms later), and the 20 ms
    # timeout really passed in simulated time
    parent = r.tasks[0]
    assert parent["nvcsw"] >= 2
    assert r.sim_seconds >= 0.030
    assert r.syscalls["epoll_pwait"] >= 12 and r.syscalls["eventfd2"] == 3     # one refused: bad flags


@pytest.mark.qemu
@pytest.mark.parametrize("arch", list(CC))
def test_epoll_matches_qemu(cguest, arch):
    exe = _elf(cguest, arch)
    if shutil.which(QEMU[arch]) is None:
        pytest.skip(f"{QEMU[arch]} is not installed")
    q = subprocess.run([QEMU[arch], str(exe)], capture_output=True, timeout=60)
    r = Machine().load(exe).run()
    assert (r.exit_status, r.stdout.decode()) == (q.returncode, q.stdout.decode())


def test_epoll_wait_on_nothing_is_a_deadlock_not_a_hang(tmp_path, cguest):
    """An infinite epoll_wait with nothing that can ever wake it ends the run with a clear reason."""
    src = tmp_path / "w.c"
    src.write_text("#include <sys/epoll.h>\n#include <unistd.h>\nint main(void){int p[2];"
                   "struct epoll_event e={.events=EPOLLIN};int ep=epoll_create1(0);pipe(p);"
                   "epoll_ctl(ep,EPOLL_CTL_ADD,p[0],&e);return epoll_wait(ep,&e,1,-1);}\n")
    r = Machine().load(cguest(src, "arm64")).run()
    assert r.stop_reason == "deadlock" and "epoll_wait" in r.message
