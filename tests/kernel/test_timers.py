"""pselect6 (kernel/syscalls/select.py), timerfd (kernel/syscalls/timerfd.py) and signalfd4 (kernel/syscalls/signalfd.py)
with tests/oracle/guests/timers_probe.c, whose output is what qemu-user (forwarding to the host
Linux kernel) prints on both arches, and what the real-kernel oracle checks (case timers)."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from emukern.api import Machine

PROBE = Path(__file__).resolve().parents[1] / "oracle" / "guests" / "timers_probe.c"


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_select_timerfd_signalfd_probe(cguest, arch):
    r = Machine(arch=arch).load(cguest(PROBE, arch, "-Wall"), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == PROBE.with_suffix(".expected").read_text()
    for name in ("pselect6", "timerfd_create", "timerfd_settime", "timerfd_gettime", "signalfd4"):
        assert r.syscalls[name] > 0, name


def test_probe_is_deterministic(cguest):
    exe = cguest(PROBE, "riscv64", "-Wall")
    a, b = (Machine(arch="riscv64").load(exe, []).run() for _ in range(2))
    assert (a.stdout, a.cycles) == (b.stdout, b.cycles)


PERIODIC = r"""
#include <stdint.h>
#include <stdio.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
int main(void) {
    /* a 1 ms periodic timer left alone for 10.5 ms: the first read counts exactly the 10
       expirations simulated time has passed (hrtimer_forward_now), the next one 1 */
    int t = timerfd_create(CLOCK_MONOTONIC, 0);
    struct itimerspec its = {{0, 1000000}, {0, 1000000}};
    timerfd_settime(t, 0, &its, NULL);
    struct timespec d = {0, 10500000};
    nanosleep(&d, NULL);
    uint64_t n;
    read(t, &n, 8);
    printf("%llu\n", (unsigned long long)n);
    read(t, &n, 8);
    printf("%llu\n", (unsigned long long)n);
    struct itimerspec cur;
    timerfd_gettime(t, &cur);
    printf("left %ld interval %ld\n", cur.it_value.tv_nsec, cur.it_interval.tv_nsec);
    return 0;
}
"""


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_timerfd_counts_expirations_from_simulated_time(cguest, tmp_path, arch):
    src = tmp_path / "periodic.c"
    src.write_text(PERIODIC)
    r = Machine(arch=arch).load(cguest(src, arch), []).run()
    assert r.exit_status == 0, r.message
    lines = r.stdout.decode().splitlines()
    assert lines[0] == "10" and lines[1] == "1", lines
    left, interval = lines[2].split()[1], lines[2].split()[3]
    assert interval == "1000000" and 0 < int(left) <= 1000000


SELECT_TIMEOUT = r"""
#include <stdio.h>
#include <sys/select.h>
#include <unistd.h>
int main(void) {
    int p[2];
    pipe(p);
    fd_set r;
    FD_ZERO(&r); FD_SET(p[0], &r);
    /* pselect6 writes the time left back (glibc's select() copies it to the timeval; its
       pselect() hides it): nothing ready, so none left */
    struct timeval tv = {0, 3000};
    int n = select(p[0] + 1, &r, NULL, NULL, &tv);
    printf("%d %ld.%06ld %d\n", n, (long)tv.tv_sec, (long)tv.tv_usec, FD_ISSET(p[0], &r));
    write(p[1], "x", 1);
    FD_ZERO(&r); FD_SET(p[0], &r);
    tv.tv_sec = 2; tv.tv_usec = 0;
    n = select(p[0] + 1, &r, NULL, NULL, &tv);
    printf("%d %ld %d\n", n, (long)tv.tv_sec, tv.tv_usec > 0);
    return 0;
}
"""


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_pselect_timeout_written_back(cguest, tmp_path, arch):
    src = tmp_path / "seltmo.c"
    src.write_text(SELECT_TIMEOUT)
    r = Machine(arch=arch).load(cguest(src, arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == "0 0.000000 0\n1 1 1\n"


SELECT_EINTR = r"""
#include <signal.h>
#include <stdio.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static void h(int s) { (void)s; }
int main(void) {
    int p[2];
    pipe(p);
    signal(SIGUSR2, h);
    pid_t parent = getpid();
    if (fork() == 0) {
        struct timespec d = {0, 20000000};
        nanosleep(&d, NULL);
        kill(parent, SIGUSR2);
        _exit(0);
    }
    fd_set r;
    FD_ZERO(&r); FD_SET(p[0], &r);
    struct timeval tv = {5, 0};
    int n = select(p[0] + 1, &r, NULL, NULL, &tv);
    printf("%d left 4.x: %d rbit %d\n", n, tv.tv_sec == 4, FD_ISSET(p[0], &r));
    wait(NULL);
    return 0;
}
"""


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_select_interrupted_by_a_handler(cguest, tmp_path, arch):
    """A child's signal ends a select with EINTR, the time left written back and the sets
    untouched (what `emukern compare` on debian-13-arm64 prints too; qemu-user differs: it
    writes no time back after an error)."""
    src = tmp_path / "selint.c"
    src.write_text(SELECT_EINTR)
    r = Machine(arch=arch).load(cguest(src, arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == "-1 left 4.x: 1 rbit 1\n"
