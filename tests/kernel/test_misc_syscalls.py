"""Credentials, nice values, scheduling policies, personality, gettimeofday, the sync family,
statfs, preadv/pwritev[2], close_range and readv on a pipe (kernel/syscalls/sys.py, sync.py, statfs.py, read_write.py, file.py) with
tests/oracle/guests/misc_probe.c, whose output was compared line by line with Debian 13's arm64
and riscv64 kernels (`emukern compare`: AGREE) and is checked against them in CI by the
real-kernel oracle (case misc)."""
from __future__ import annotations

from pathlib import Path

import pytest

from emukern.api import Machine

PROBE = Path(__file__).resolve().parents[1] / "oracle" / "guests" / "misc_probe.c"


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_misc_probe_matches_linux(cguest, arch):
    r = Machine(arch=arch).load(cguest(PROBE, arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == PROBE.with_suffix(".expected").read_text()
    # each is dispatched by name (none fell to -ENOSYS)
    assert r.unknown_syscalls == {}
    for name in ("close_range", "getpriority", "sched_setscheduler", "setresuid", "preadv2", "fstatfs"):
        assert r.syscalls.get(name, 0) > 0, name


def test_misc_probe_is_deterministic(cguest):
    exe = cguest(PROBE, "arm64")
    a, b = (Machine(arch="arm64").load(exe, []).run() for _ in range(2))
    assert (a.stdout, a.cycles) == (b.stdout, b.cycles)


CREDS_THREADS = r'''
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
/* raw syscalls: glibc's setuid() would broadcast the change to every thread (SIGSETXID); the
 * kernel's credentials and nice values are per thread */
static void *thr(void *arg) {
    printf("thread euid %ld nice %d\n", syscall(SYS_geteuid), getpriority(PRIO_PROCESS, 0));
    syscall(SYS_setresuid, -1, 0, -1);          /* back to the saved id 0 */
    printf("thread euid now %ld\n", syscall(SYS_geteuid));
    return 0;
}
int main(void) {
    syscall(SYS_setresuid, 0, 1000, 0);
    setpriority(PRIO_PROCESS, 0, 7);
    pthread_t t; pthread_create(&t, 0, thr, 0); pthread_join(t, 0);
    printf("main euid %ld\n", syscall(SYS_geteuid));
    fflush(stdout);
    if (fork() == 0) {
        printf("child euid %ld uid %d nice %d\n", syscall(SYS_geteuid), getuid(), getpriority(PRIO_PROCESS, 0));
        return 0;
    }
    wait(0);
    return 0;
}
'''


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_creds_and_nice_are_per_thread_and_inherited(cguest, tmp_path, arch):
    src = tmp_path / "creds_threads.c"
    src.write_text(CREDS_THREADS)
    r = Machine(arch=arch).load(cguest(src, arch, "-pthread"), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode().splitlines() == [
        "thread euid 1000 nice 7",      # copy_process: the new thread starts with main's
        "thread euid now 0",
        "main euid 1000",               # ... and its change stays its own
        "child euid 1000 uid 0 nice 7",
    ]
