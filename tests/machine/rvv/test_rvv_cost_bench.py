"""Cost model formula, cycle counts reported by execute, overrides, and the benchmark."""
from __future__ import annotations

import pytest
from rvv_helpers import enc, machine, setvl, vmem

from emukern.machine.rvv import RVVUnit
from emukern.machine.rvv.bench import bench_rvv
from emukern.machine.rvv.cost import DEFAULT_COSTS, vector_cost


def test_formula() -> None:
    assert vector_cost("arith", 1, 256, 256) == 1
    assert vector_cost("arith", 8, 256, 256) == 8
    assert vector_cost("arith", 8, 256, 128) == 16
    assert vector_cost("arith", 0.25, 256, 128) == 1          # fractional: one beat
    assert vector_cost("load", 2, 256, 256) == 2 + 2 + 2       # base + beats + regs
    assert vector_cost("vsetvl", 8, 256, 256) == 1
    assert vector_cost("csr", 1, 256, 256) == 1
    assert vector_cost("arith", 4, 256, 256, {"arith.beat": 3}) == 12
    with pytest.raises(KeyError):
        vector_cost("nonsense", 1, 256, 256)
    assert all(isinstance(v, (int, float)) for v in DEFAULT_COSTS.values())


def test_execute_reports_costs_and_overrides() -> None:
    u, x, mem = machine(256)
    setvl(u, x, mem, 32, 8)
    assert u.execute(enc("vadd.vv", 8, 16, 24), x, mem).cycles == 8
    u2 = RVVUnit(vlen=256, dlen=128)
    u2.execute(0xC0000057 | (3 << 20) | (2 << 23) | (5 << 7) | (7 << 12), x, mem)  # e32 m8
    assert u2.execute(enc("vadd.vv", 8, 16, 24), x, mem).cycles == 16
    u.set_costs({"arith.beat": 2})
    assert u.execute(enc("vadd.vv", 8, 16, 24), x, mem).cycles == 16
    x.write(10, mem.base)
    setvl(u, x, mem, 32, 1)
    # worked out by hand from the documented formula (base + beat x beats + reg x EMUL) and the
    # defaults load.base=2, load.beat=1, load.reg=1 — not by calling vector_cost, the same code
    assert (DEFAULT_COSTS["load.base"], DEFAULT_COSTS["load.beat"], DEFAULT_COSTS["load.reg"]) == (2, 1, 1)
    assert u.execute(vmem(True, 32, 8, 10), x, mem).cycles == 2 + 1 * 1 + 1 * 1     # e32, SEW=32: EMUL 1
    assert u.execute(vmem(True, 64, 8, 10), x, mem).cycles == 2 + 1 * 2 + 1 * 2     # e64 at SEW 32: EMUL 2


def test_bench_runs() -> None:
    r = bench_rvv(n=200)
    assert set(r) == {f"{i} e32 {m}" for i in ("vadd.vv", "vle32.v", "vse32.v")
                      for m in ("m1", "m8")}
    assert all(v > 0 for v in r.values())
