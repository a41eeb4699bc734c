"""The arm64 SVE syscall/trap path's shortcuts say what the long forms said.

- fpsimd.py tests ``time_after(jiffies, sve_timeout)`` as a compare against a cycle worked out
  once per value of sve_timeout: it must agree with ``clock.jiffies(now) > sve_timeout`` at every
  cycle, on both sides of each boundary, for any HZ and frequency.
- ``Arm64Cpu.queue_seq`` queues the same op ``queue_stub`` would, and a new one after a VL change.
"""
from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from emukern.api import Machine
from emukern.kernel.arch.arm64 import fpsimd
from emukern.machine.clock import Clock


@pytest.mark.parametrize("freq, hz", [(1_000_000_000, 250), (1_000_000, 100), (1_000_003, 97), (7, 3), (250, 250)])
def test_sve_timeout_cycle_matches_jiffies(freq, hz):
    clock = Clock(freq_hz=freq, hz=hz, timer_freq=freq)
    k = SimpleNamespace(clock=clock)
    rnd = random.Random(freq ^ hz)
    for timeout in [0, 1, 2, 99, 100, 101, -1, -5] + [rnd.randrange(0, 10**6) for _ in range(50)]:
        th = fpsimd.Arm64Thread(sve_timeout=timeout)
        edge = -(-(timeout + 1) * freq // hz)
        for now in {0, 1, max(0, edge - 2), max(0, edge - 1), max(0, edge), edge + 1, edge + 2,
                    rnd.randrange(0, 2 * abs(edge) + 10)}:
            cpu = SimpleNamespace(now=now)
            assert fpsimd._sve_timeout_passed(k, cpu, th) == (clock.jiffies(now) > timeout), (timeout, now)


def test_sve_timeout_cycle_follows_a_new_value():
    k = SimpleNamespace(clock=Clock(freq_hz=1_000_000, hz=100, timer_freq=1_000_000))
    th = fpsimd.Arm64Thread(sve_timeout=100)
    assert not fpsimd._sve_timeout_passed(k, SimpleNamespace(now=1_000_000), th)
    assert fpsimd._sve_timeout_passed(k, SimpleNamespace(now=1_010_000), th)
    th.sve_timeout = 200                       # a later SVE access trap moved it
    assert not fpsimd._sve_timeout_passed(k, SimpleNamespace(now=1_010_000), th)
    assert fpsimd._sve_timeout_passed(k, SimpleNamespace(now=2_010_000), th)


def test_queue_seq_queues_what_queue_stub_queues(guest_asm):
    m = Machine(arch="arm64", sve_vl=256).load(guest_asm / "arm64" / "hello.S")
    assert m.kernel is not None
    cpu = m.kernel.cpus[0]
    q = cpu._stub_queue
    cpu.queue_stub("sve_flush_live")
    cpu.queue_seq("sve_flush_live")
    assert q[0] is q[1] and q[0].vl == 256
    cpu.set_vl(512)
    cpu.queue_seq("sve_flush_live")
    assert q[2] is not q[0] and q[2].vl == 512 and q[2].name == "sve_flush_live"
    cpu.queue_seq("sve_flush_p")              # never queued before: queue_stub makes it
    assert q[3].name == "sve_flush_p" and q[3].vl == 512 and q[3].native == q[0].native
    q.clear()
