"""Process-query syscalls (kernel/syscalls/sys.py): process groups and sessions with Linux's
rules, umask, getrusage/times/sysinfo, clock_getres, prctl names."""
from __future__ import annotations

import pytest

from emukern.api import Machine


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_proc_syscalls(cbuild, arch):
    r = Machine().load(cbuild("proc_syscalls", arch, static=True, libs=("-lpthread",))).run()
    assert r.exit_status == 0
    out = r.stdout.decode().splitlines()
    assert out == [
        "pgid(0)==pid: 1 sid(0)==pid: 1",
        "setsid as group leader: -1",                 # EPERM
        "getpgid(no such pid): -3",                   # ESRCH
        "setpgid(child, 0): 0",
        "child pgid==child: 1",
        "setpgid(bad pgid): -22",
        "moved child: pgid=own setsid=-1 (a group leader)",
        "child status 5",
        "second child: setsid=own sid=own pgid=own setpgid-after=-1",   # a session leader: EPERM
        "second child status 6, its sid now: -3",     # reaped: ESRCH
        "umask old=22 new=27",
        "forked child cwd=/proc umask=77",            # copied at fork, not the parent's later /dev
        "after a thread's chdir: /proc/1",            # shared with the thread (CLONE_FS)
        "getrusage self: 0 utime>0: 1",
        "getrusage bad who: -22",
        "times >= 0: 1",
        "sysinfo: 0 procs>=1: 1 totalram>0: 1",
        "clock_getres monotonic: 0 0.000000001",
        "clock_getres coarse: 0 ns=4000000",          # one jiffy at HZ=250
        "clock_getres bad: -22",
        "prctl name: renamed-task",
    ]
    assert r.unknown_syscalls == {}                    # every call above is implemented


@pytest.mark.parametrize("cpus", [1, 3])
def test_glibc_counts_the_machines_cpus(cbuild, cpus):
    r = Machine(cpus=cpus).load(cbuild("nproc", "arm64", static=True)).run()
    assert r.stdout.decode() == f"onln={cpus} conf={cpus} get_nprocs={cpus} conf={cpus}\n"
    assert r.syscalls["openat"] >= 1                   # /sys/devices/system/cpu/online
