"""The shortcuts the 1-64-CPU MRS contention sweep takes give exactly what the long ways give.

* ``RunLoop._round`` picks the CPU furthest behind from the last round's minimum of the other
  CPUs' clocks (``_others_min``, left by ``_lockstep_limit``) instead of two passes over every
  CPU; the long way is forced by dropping that value after every ``_lockstep_limit``.
* ``Arm64Cpu``'s UNDEF path reads the word from the last executable mapping's buffer
  (``_undef_word``) and keeps the syndrome of words that are neither SVE nor counter reads
  (``_undef_syndrome``); the long way is forced by a plain ``_word`` and a cache that forgets.

Each program runs both ways on several CPU counts, with a tick period and quanta that are not
multiples of anything, and the JSON summary and every field of every trap record must be equal.
Not vacuous: the shortcuts are shown to be taken."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from emukern.api import Machine
from emukern.kernel.smp import RunLoop
from emukern.machine.cpu_arm64 import Arm64Cpu

GUESTS = Path(__file__).resolve().parents[2] / "guest_asm"
TRAP_FIELDS = ("kind", "pc", "cpu", "insn", "esr", "addr", "access", "detail", "handler", "decision", "cycles",
               "ret", "notes")

# (program, argv, options): SMP programs with locks, futexes, sleeps, idle CPUs and preemption
CASES = [
    ("arm64/mrs_bench.S", ["4", "60"], {"cpus": 4, "policies": {"arm64-mrs": "hook-list"}}),
    ("arm64/mrs_bench.S", ["5", "40"], {"cpus": 5, "policies": {"arm64-mrs": "direct"}, "quantum": 13}),
    ("arm64/mrs_bench.S", ["6", "30", "3"], {"cpus": 3, "policies": {"arm64-mrs": "hook-list"}, "quantum": 7}),
    ("arm64/mrs_bench.S", ["8", "30"], {"cpus": 8, "policies": {"arm64-mrs": "hook-list"}, "idst": True}),
    ("arm64/mrs_sigill.S", [], {"cpus": 2}),
    ("arm64/mrs_regs.S", [], {"cpus": 2}),
    ("arm64/mrs_loop.S", [], {"cpus": 3, "policies": {"arm64-mrs": "hook-list"}}),
    ("arm64/sve_block.S", [], {"cpus": 2}),
    ("arm64/threads.S", [], {"cpus": 3, "quantum": 997}),
    ("arm64/lat_ctx.S", [], {"cpus": 2}),
    ("riscv/threads.S", [], {"cpus": 4, "quantum": 991}),
    ("riscv/preempt_pipe.S", [], {"cpus": 2}),
    ("riscv/lat_ctx.S", [], {"cpus": 3}),
]


class _Forgetful(dict):
    """A cache that never keeps anything (the long way every time)."""

    def __setitem__(self, key: Any, value: Any) -> None:
        pass


def _run(prog: str, argv: list[str], options: dict[str, Any], fast: bool) -> tuple[str, list[tuple], Machine]:
    m = Machine(hz=64000, max_insns=3_000_000, **options).load(GUESTS / prog, argv)
    loop = m.kernel.runloop
    if not fast:
        limit = loop._lockstep_limit

        def no_shortcut(cpu: Any, now: int | None = None) -> int:
            out = limit(cpu, now)
            loop._others_min = None
            return out
        loop._lockstep_limit = no_shortcut             # type: ignore[method-assign]
        for cpu in m.kernel.cpus:
            if isinstance(cpu, Arm64Cpu):
                cpu._undef_word = cpu._word             # type: ignore[method-assign]
                cpu._undef_syndrome = _Forgetful()
    r = m.run()
    traps = [(rec.seq, rec.cpu, rec.tid, rec.time, rec.kind, rec.tif) + tuple(getattr(rec.trap, f) for f in TRAP_FIELDS)
             for rec in m.kernel.trap_log]
    return json.dumps(r.to_json(), indent=1, sort_keys=True), traps, m


@pytest.mark.parametrize("prog,argv,options", CASES, ids=[f"{c[0]}-{c[2]['cpus']}cpus-{i}" for i, c in enumerate(CASES)])
def test_shortcuts_equal_the_long_way(prog, argv, options):
    fast_json, fast_traps, _ = _run(prog, argv, options, fast=True)
    slow_json, slow_traps, _ = _run(prog, argv, options, fast=False)
    assert fast_json == slow_json
    assert fast_traps == slow_traps


def test_the_shortcuts_are_taken(monkeypatch):
    """On the contended sweep's machine the pick shortcut serves most rounds and the UNDEF word
    and syndrome come from the caches after the first trap of each CPU."""
    taken = {"pick": 0, "rounds": 0}
    pick = RunLoop._pick_cpu

    def counting_pick(self: RunLoop) -> Any:
        taken["pick"] += 1
        return pick(self)
    rnd = RunLoop._round

    def counting_round(self: RunLoop) -> bool:
        taken["rounds"] += 1
        return rnd(self)
    monkeypatch.setattr(RunLoop, "_pick_cpu", counting_pick)
    monkeypatch.setattr(RunLoop, "_round", counting_round)
    words = {"slow": 0}
    word = Arm64Cpu._word

    def counting_word(self: Arm64Cpu, pc: int) -> int | None:
        words["slow"] += 1
        return word(self, pc)
    monkeypatch.setattr(Arm64Cpu, "_word", counting_word)
    m = Machine(cpus=8, max_insns=None, policies={"arm64-mrs": "hook-list"}).load(GUESTS / "arm64/mrs_bench.S",
                                                                                   ["8", "200"])
    r = m.run()
    assert r.exit_status == 0
    traps = r.traps.get("illegal", 0)
    assert traps == 8 * 200
    assert taken["rounds"] > traps                      # (about one round per trap: the lock contends)
    assert taken["pick"] < taken["rounds"] // 4         # the long pick is the exception
    assert words["slow"] <= 8 * 2                       # the mapping search once per CPU, not per trap
    assert all(len(c._undef_syndrome) == 1 for c in m.kernel.cpus)   # the one MRS word, cached
