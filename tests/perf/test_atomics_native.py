"""arm64 LSE atomics run inside Unicorn (machine/cpu_arm64.py, "LSE atomics run inside
Unicorn"; on by default, EMUKERN_NATIVE_ATOMICS=0 turns it off):
a multi-threaded glibc program no longer stops the CPU at each of its atomics, and everything
it records is what the exit path (the default) records."""
from __future__ import annotations

import json

import pytest

from emukern.api import Machine
from emukern.bench.stats import Unavailable
from emukern.machine.cpu_arm64 import Arm64Cpu


def _pingpong():
    from emukern.bench.switch import guest
    try:
        return guest("arm64")
    except Unavailable as exc:
        pytest.skip(str(exc))


def _run(prog, native: bool, monkeypatch):
    monkeypatch.setattr(Arm64Cpu, "NATIVE_ATOMICS", native)
    m = Machine(arch="arm64", max_insns=None)
    m.load(prog, ["t", "30"])
    r = m.run()
    k = m._loaded()
    return r, k, sum(c.exit_stops for c in k.cpus)


def test_thread_round_trips_take_no_exit_and_record_the_same(monkeypatch):
    prog = _pingpong()
    r0, k0, stops0 = _run(prog, False, monkeypatch)
    r1, k1, stops1 = _run(prog, True, monkeypatch)
    assert stops0 > 60            # about eight atomics per round trip, each an exit
    assert stops1 == 0
    assert r1.stdout == r0.stdout and r1.exit_status == r0.exit_status == 0
    assert json.dumps(r1.to_json(), sort_keys=True, default=str) == json.dumps(r0.to_json(), sort_keys=True, default=str)
    assert [str(t) for t in k1.trap_log] == [str(t) for t in k0.trap_log]


def test_misaligned_atomics_fault_as_on_the_exit_path(cguest, monkeypatch):
    """lse_atomics.c: every atomic aligned and misaligned (SIGBUS BUS_ADRALN), run both ways:
    the hook's stop before a misaligned one leaves the count where the exit left it."""
    prog = cguest("lse_atomics", "arm64", "-march=armv8.3-a")
    outs = []
    for native in (False, True):
        monkeypatch.setattr(Arm64Cpu, "NATIVE_ATOMICS", native)
        m = Machine(arch="arm64")
        m.load(prog)
        r = m.run()
        outs.append((r.stdout, json.dumps(r.to_json(), sort_keys=True, default=str),
                     [str(t) for t in m._loaded().trap_log]))
    assert b"BUS_ADRALN" in outs[1][0]
    assert outs[0] == outs[1]


def test_counting_per_instruction_turns_the_atomics_back_into_exits(cguest, monkeypatch):
    """The debugger's exact counting (set_exact) adds its count hook after the atomics' hooks;
    the atomics go back to being exits, and the run records the same."""
    prog = cguest("lse_atomics", "arm64", "-march=armv8.3-a")
    outs = []
    for native, exact in ((False, False), (True, True)):
        monkeypatch.setattr(Arm64Cpu, "NATIVE_ATOMICS", native)
        m = Machine(arch="arm64")
        m.load(prog)
        k = m._loaded()
        if exact:
            for c in k.cpus:
                c.counter.set_exact(True)
        r = m.run()
        outs.append((r.stdout, r.user_insns, [str(t) for t in k.trap_log]))
    assert outs[0] == outs[1]
