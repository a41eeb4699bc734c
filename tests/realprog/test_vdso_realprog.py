"""Real Debian programs with and without the vDSO (kernel/vdso): trixie's dynamic sqlite3 (ld.so
finds the vDSO through AT_SYSINFO_EHDR, glibc then calls its time functions) and the static
busybox print the same bytes either way, the vDSO's code making the same syscalls on the one clock."""
from __future__ import annotations

import pytest

from emukern.api import Machine

SQL = "select 6*7, datetime(0, 'unixepoch'), datetime('now'), strftime('%s', 'now');"


def _run(root, mode, *argv):
    m = Machine(root=str(root), vdso=mode).load(root / argv[0], list(argv[1:]))
    return m, m.run()


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_sqlite3_same_output_with_and_without_the_vdso(debian_root, arch):
    root = debian_root(arch)
    if not (root / "usr/bin/sqlite3").exists():
        pytest.skip("the realprog root has no sqlite3")
    (m_on, on), (_, off) = (_run(root, mode, "usr/bin/sqlite3", ":memory:", SQL) for mode in ("auto", "off"))
    assert on.exit_status == off.exit_status == 0, (on.stderr, off.stderr)
    assert on.stdout == off.stdout and on.stdout.startswith(b"42|1970-01-01 00:00:00|2026-01-01")
    assert on.stderr == off.stderr
    # datetime('now'): glibc's time call ran the vDSO's code (arm64 glibc: gettimeofday;
    # riscv64: clock_gettime), whose svc/ecall lies in the page the trampoline opens
    from emukern.kernel.signal.delivery import sigtramp_addr
    tramp = sigtramp_addr(m_on.kernel)
    from_vdso = {str(t).split()[5] for t in m_on.trap_log if 0 <= t.pc - tramp < 0x1000}
    assert {"gettimeofday:" if arch == "arm64" else "clock_gettime:"} <= from_vdso


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_busybox_date_same_output_with_and_without_the_vdso(debian_root, arch):
    root = debian_root(arch)
    outs = [_run(root, mode, "usr/bin/busybox", "date", "-u", "+%s %Y")[1] for mode in ("auto", "off")]
    assert outs[0].exit_status == outs[1].exit_status == 0
    assert outs[0].stdout == outs[1].stdout and outs[0].stdout.startswith(b"1767225600 2026")
