"""The debugger engine and the kernel hooks it relies on (Kernel.trap_gate / resume_trap / run_cap)."""
from __future__ import annotations

import pytest

from debug_testutil import ARM, DATA, RV
from emukern.api import Machine
from emukern.debug.conditions import Condition, EvalContext
from emukern.debug.engine import Debugger
from emukern.debug.errors import DebugError


def _log(k):
    return [(r.kind, r.pc, r.handler, r.decision) for r in k.trap_log]


@pytest.mark.parametrize("prog", [RV, ARM, str(DATA / "rv_dirty.S")])
def test_deferring_every_trap_changes_nothing(prog):
    ref = Machine().load(prog)
    r1 = ref.run()
    m = Machine().load(prog)
    k = m.kernel
    k.trap_gate = lambda cpu, task, trap: True
    deferred = 0
    while True:
        alive = k.runloop.step_loop(1)
        if k.deferred_trap is not None:
            deferred += 1
            cpu, trap = k.deferred_trap
            assert cpu.get_pc() == trap.pc          # stopped at the trapping instruction
            alive = k.runloop.resume_trap()
        if not alive:
            break
    from emukern.kernel.result import RunResult
    r2 = RunResult.from_kernel(k)
    assert deferred == len(r1.traps) or deferred == sum(r1.traps.values())
    assert _log(k) == _log(ref.kernel)
    assert (r2.exit_status, r2.stdout, r2.user_insns) == (r1.exit_status, r1.stdout, r1.user_insns)
    assert r2.cycles == r1.cycles


def test_stepi_one_at_a_time_matches_run():
    ref = Machine().load(str(DATA / "arm64_loop.S"))
    r = ref.run()
    d = Debugger(lambda: Machine().load(str(DATA / "arm64_loop.S")))
    n = 0
    while not d.finished:
        ev = d.stepi(1) if d.k.deferred_trap is None else d.finish()
        n += 1
        assert n < 100
    assert d.exit_status == r.exit_status == 7
    assert d.k.cpus[0].user_insns == r.user_insns
    assert _log(d.k) == _log(ref.kernel)


def test_breakpoint_does_not_count_the_instruction():
    d = Debugger(lambda: Machine().load(RV))
    d.add_addr_breakpoint("vector_start")
    ev = d.cont()
    assert ev.reason == "breakpoint" and ev.pc == d.symbols["vector_start"]
    assert d.cpu.user_insns == 6                       # 5 + the ecall; li t0 not yet executed
    ev = d.stepi(1)
    assert d.cpu.user_insns == 7 and ev.reason == "step"


def test_condition_language():
    import emukern.debug.conditions as C
    box = ["Off"]
    saved = dict(C.VARIABLES)
    try:
        C.register_variable("tvs", lambda ctx: box[0])
        C.register_variable("tj", lambda ctx: 300)
        C.register_variable("tto", lambda ctx: 250)
        C.register_variable("tnone", lambda ctx: None)
        ctx = EvalContext(None, None, None)

        class K:
            class sysctl:
                entries: dict = {}
            class policies:
                values: dict = {}

        def ev(text):
            return Condition(text, K, None).evaluate(ctx)

        assert ev("tvs=Off") and ev("tvs==off") and not ev("tvs=Dirty") and ev("tvs!=Dirty")
        assert ev("tj>tto") and not ev("tj<tto") and ev("tj>=300") and ev("tj > 0x10")
        assert ev("tj>tto and tvs=Off") and ev("tvs=Dirty or tj=300") and ev("not tvs=Dirty")
        assert ev("(tvs=Dirty or tj=300) and tto=250")
        assert not ev("tnone=1") and not ev("tnone>0")
        c = Condition("tvs-changes", K, None)
        c.prime(ctx)
        assert not c.evaluate(ctx)
        box[0] = "Dirty"
        assert c.evaluate(ctx) and not c.evaluate(ctx)
        c2 = Condition("tvs changes", K, None)
        c2.prime(ctx)
        box[0] = "Clean"
        assert c2.evaluate(ctx)
        for bad in ("", "nosuch=1", "(tvs=Off", "tvs=", "= 3", "tvs=Off and"):
            with pytest.raises(DebugError):
                Condition(bad, K, None)
    finally:
        C.VARIABLES.clear()
        C.VARIABLES.update(saved)
