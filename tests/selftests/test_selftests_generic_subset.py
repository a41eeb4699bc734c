"""A small CI subset of ``emukern selftests --suite generic``: tests that pass today on both arches
and run in about a second each, so a regression in futexes, exec, sleeps, /proc or pidfds fails
the ordinary test run (the whole generic suite stays a separate step).  Needs the cached
linux-source and the cross compilers; skips otherwise, like the upstream tests beside it."""
from __future__ import annotations

import shutil

import pytest

from emukern.selftests.build import Builder
from emukern.selftests.catalog import select
from emukern.selftests.expected import ExpectedTable
from emukern.selftests.runner import RunOptions, matrix, run_one

SUBSET = ["futex_wait_timeout", "futex_wait_wouldblock", "futex_requeue", "futex_requeue_pi",
          "futex_requeue_pi_mismatched_ops", "futex_requeue_pi_signal_restart", "null-argv",
          "nanosleep", "proc-self-isnt-kthread", "fd-002-posix-eq", "proc-uptime-001", "proc-tid0",
          "eventfd_test", "pidfd_open_test", "kcmp_test", "pidfd_wait", "peeksiginfo", "proc-self-syscall",
          "proc-self-wchan", "proc-self-map-files-001", "fd-001-lookup",
          # rseq (librseq linked in), openat2's flag and struct checks, POSIX mqueue limits, splice
          "rseq/basic_test", "rseq/param_test", "rseq/param_test_mm_cid", "openat2_test", "mq_open_tests",
          "mqueue-lat", "default_file_splice_read",
          # the core syscall layer: close_range/F_CREATED_QUERY, SysV msg queues (MSG_COPY,
          # msg_next_id), OFD locks, fchmodat2, mlock with libcap
          "close_range_test", "msgque", "ofdlocks", "fchmodat2_test", "mlock-random-test",
          # SO_PASSPIDFD / SCM_PIDFD / SO_PEERPIDFD
          "scm_pidfd",
          # pid namespaces and clone3 set_tid (kernel/pid.py)
          "clone3_set_tid", "proc-loadavg-001", "pidfd_fdinfo_test",
          # capability sets across setuid and exec, with its tmpfs mount (run in its own directory)
          "test_execve"]


@pytest.fixture(scope="module")
def builder():
    from emukern.selftests.source import fetch_debian, source_cache
    if not any(source_cache().glob("*/.emukern-unpacked")):
        pytest.skip("linux-source-6.12 is not in the cache (run `emukern selftests` once)")
    from emukern.selftests.source import ensure_generic
    src = fetch_debian()
    ensure_generic(src)             # a cache unpacked before a directory joined GENERIC_DIRS
    return Builder(src)


@pytest.mark.parametrize("tid", [t.id for t in select(only=SUBSET, suite="generic")])
def test_generic_selftest_gives_its_expected_verdict(builder, tid):
    arch = tid.split("/", 1)[0]
    cc = {"arm64": "aarch64-linux-gnu-gcc", "riscv64": "riscv64-linux-gnu-gcc"}[arch]
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} is not installed")
    t = next(x for x in select(only=[tid], suite="generic") if x.id == tid)
    built = builder.build(t)
    assert built.ok, built.reason
    table = ExpectedTable.load()
    for cfg in matrix(t, {}):
        o = run_one(t, built, cfg, RunOptions())
        exp = table.lookup(t.id, {}, None)
        assert exp is not None and o.verdict == exp.verdict == "pass", (cfg, o.verdict, o.cause, o.output[-400:])
