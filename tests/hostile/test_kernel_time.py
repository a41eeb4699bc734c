"""Issue 11 items 7 and 8: saturating time arithmetic (a guest that sleeps forever is reported as
such, no spin) and budgets that count kernel work (--max-cycles, --timeout, --host-timeout)."""
from __future__ import annotations

import time

import pytest

from emukern.api import Machine
from emukern.cli import main
TIME_MAX = 1 << 62           # emukern.kernel.sched.TIME_MAX: the end of the simulated clock

ARCHES = ("riscv64", "arm64")


def _run(exe, argv=(), **opts):
    m = Machine(**opts)
    m.load(exe, list(argv))
    return m.run(), m


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("mode,reason", [("nanosleep", "1:nanosleep forever"), ("futex", "1:futex forever")])
def test_sleeping_forever_is_reported_not_spun(cprog, watchdog, arch, mode, reason):
    watchdog(60)
    r, m = _run(cprog("sleep_forever", arch), [mode], max_insns=10_000_000)
    assert r.stop_reason == "deadlock" and r.exit_status == 125
    assert "sleeps forever" in r.message and reason in r.message
    assert r.cycles < 10**9                     # the clock did not jump to the end of time
    assert r.stdout == b""                      # the sleep never returned


def test_a_child_sleeping_forever_under_a_waiting_parent(cprog, watchdog):
    watchdog(60)
    r, _ = _run(cprog("sleep_forever", "riscv64"), ["child"])
    assert r.stop_reason == "deadlock"
    assert "1:wait4" in r.message and "nanosleep forever" in r.message


@pytest.mark.parametrize("arch", ARCHES)
def test_the_end_of_the_clock_is_a_clean_stop(cprog, watchdog, arch):
    # a finite sleep to 27 ms before 2^62 cycles, then a spin: the clock runs out, cleanly
    watchdog(120)
    r, _ = _run(cprog("sleep_forever", arch), ["clockend"], max_insns=None)
    assert r.stdout == b"woke near the end of time\n"
    assert r.stop_reason == "budget" and r.exit_status == 124
    assert "end" in r.message and r.cycles >= TIME_MAX


@pytest.mark.parametrize("arch", ARCHES)
def test_max_cycles_stops_a_syscall_storm(cprog, watchdog, arch):
    watchdog(120)
    r, _ = _run(cprog("syscall_storm", arch), max_cycles=2_000_000, max_insns=None)
    assert r.stop_reason == "budget" and r.exit_status == 124
    assert "--max-cycles" in r.message
    assert 2_000_000 <= r.cycles < 2_000_000 + 100_000
    assert r.kernel_cycles > r.user_insns       # it was the kernel's work that used the budget
    r2, _ = _run(cprog("syscall_storm", arch), max_cycles=2_000_000, max_insns=None)
    assert (r2.cycles, r2.user_insns, r2.syscalls) == (r.cycles, r.user_insns, r.syscalls)


@pytest.mark.parametrize("arch", ARCHES)
def test_timeout_stops_a_fork_bomb(cprog, watchdog, arch):
    watchdog(200)
    r, m = _run(cprog("fork_bomb", arch), timeout=0.004, max_insns=None)
    assert r.stop_reason == "budget" and "--timeout 0.004 s" in r.message
    assert 4_000_000 <= r.cycles < 4_200_000
    assert r.syscalls.get("clone", 0) > 10


def test_timeout_bounds_a_long_sleep(cprog, watchdog):
    # the idle path jumps to the next timer: it must stop at the budget, not after the sleep
    watchdog(60)
    r, _ = _run(cprog("sleep_forever", "riscv64"), ["clockend"], timeout=2.5)
    assert r.stop_reason == "budget" and r.stdout == b""
    assert r.cycles == 2_500_000_000


def test_host_timeout(cprog, watchdog):
    watchdog(60)
    t0 = time.perf_counter()
    r, _ = _run(cprog("syscall_storm", "riscv64"), host_timeout=0.5, max_insns=None)
    assert r.stop_reason == "budget" and "--host-timeout" in r.message
    assert time.perf_counter() - t0 < 30


def test_cli_options(cprog, capsys):
    exe = str(cprog("syscall_storm", "riscv64"))
    assert main(["run", exe, "--max-cycles", "200000", "--max-insns", "0"]) == 124
    assert "--max-cycles" in capsys.readouterr().err
    assert main(["run", exe, "--timeout", "0.0002"]) == 124
    assert "--timeout" in capsys.readouterr().err
    assert main(["run", exe, "--timeout", "-1"]) == 2
    assert "must be positive" in capsys.readouterr().err
