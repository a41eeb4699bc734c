"""rseq (kernel/rseq.c; emukern/kernel/signal/rseq.py, syscalls/rseq.py): registration with
Linux's checks, the CPU fields at the return to user mode, and the abort of a critical section
on preemption and on signal delivery.

The expected lines are Linux 6.12's semantics (kernel/rseq.c's sys_rseq and rseq_ip_fixup):
qemu-user answers rseq with ENOSYS, so it cannot be the peer here.  On arm64 Debian's glibc
registers an area at start-up (its bits/rseq.h defines RSEQ_SIG); its riscv64 build does not
define RSEQ_SIG for RISC-V and never calls rseq, so the probe registers its own there."""
from __future__ import annotations

import pytest

from emukern.api import Machine

EBUSY, EINVAL, EPERM = 16, 22, 1

COMMON = [
    f"unregister, none registered: -{EINVAL}",
    f"misaligned: -{EINVAL}",                  # a 32-byte area must be 32-byte aligned
    f"too short: -{EINVAL}",                   # shorter than the original 32-byte ABI
    f"unknown flag: -{EINVAL}",
    "longer area: 0",                          # a longer area covering every field is fine
    "unregister longer: 0",
    "register: 0 cpu_id 0 cpu_id_start 0 mm_cid 0",    # the fields are current on return
    # the tick switched the spinning thread out inside [start_ip, start_ip+post_commit_offset):
    # it resumed at abort_ip, and the kernel cleared rseq_cs
    "preempted in the section: returned 1 (1: abort handler), rseq_cs now 0",
    # alone on the CPU (no switch), a signal's delivery aborts it: the frame returns to abort_ip
    "signal in the section: returned 1, handler ran 1",
    # the word before abort_ip is not the registered signature: force_sigsegv
    "bad signature: killed by 11",
    "done",
]

GLIBC_ARM64 = [
    "glibc registered: size 32 cpu_id 0 sched_getcpu 0",
    f"again, same args: -{EBUSY}",
    f"again, other area: -{EINVAL}",
    f"again, other sig: -{EPERM}",
    f"unregister, wrong sig: -{EPERM}",
    f"unregister, other len: -{EINVAL}",
    "unregister: 0 cpu_id now -1",             # RSEQ_CPU_ID_UNINITIALIZED after unregistering
]


def _run(cguest, arch, *argv, **options):
    m = Machine(arch=arch, max_insns=400_000_000, **options)
    r = m.load(cguest("rseq_probe", arch), list(argv)).run()
    assert r.exit_status == 0, (r.message, r.fault)
    return r, r.stdout.decode().splitlines()


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_rseq_probe_follows_linux(cguest, arch):
    r, out = _run(cguest, arch)
    want = (GLIBC_ARM64 if arch == "arm64" else ["glibc registered: none"]) + COMMON
    assert out == want
    # the preemption really happened inside the section: the sibling ran, and we were switched out
    me = next(t for t in r.tasks if t["tid"] == 1)
    assert me["nivcsw"] >= 1


@pytest.mark.parametrize("sched", ["fair", "rr"])
def test_rseq_abort_on_preemption_under_either_run_queue(cguest, sched):
    _, out = _run(cguest, "riscv64", sched=sched)
    assert "preempted in the section: returned 1 (1: abort handler), rseq_cs now 0" in out


def test_cpu_id_follows_a_migration(cguest):
    """sched_setaffinity to CPU 1 moves the thread: the area's cpu_id reads 1 when it returns."""
    _, out = _run(cguest, "arm64", "cpu1", cpus=2)
    assert "pinned to cpu 1: 0 cpu_id 1" in out


def test_glibc_registration_is_the_one_syscall_linux_sees(cguest):
    """glibc's start-up rseq call now succeeds (it got ENOSYS before): still one rseq syscall
    at start-up, whose result glibc keeps (sched_getcpu reads cpu_id from the area)."""
    from emukern.api import Machine as M
    r = M(arch="arm64").load(cguest("nproc", "arm64")).run()
    assert r.syscalls.get("rseq") == 1
