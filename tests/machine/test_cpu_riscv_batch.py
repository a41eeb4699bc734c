"""Running consecutive vector instructions in one hook must not change any result or count."""
from __future__ import annotations

import json

import pytest

from emukern.api import Machine
from emukern.machine.cpu_riscv import RiscvCpu


@pytest.mark.parametrize("prog,argv,opts", [
    ("vec_memcpy.S", [], {}),
    ("vec_saxpy.S", [], {}),
    ("vec_reduce.S", [], {}),
    ("vec_memcpy.S", [], {"hz": 100_000}),          # ticks land inside vector runs
])
def test_batched_vector_execution_is_invisible(guest_asm, monkeypatch, prog, argv, opts):
    results = []
    for batch in (True, False):
        monkeypatch.setattr(RiscvCpu, "batch_vector", batch)
        m = Machine(**opts)
        r = m.load(guest_asm / "riscv" / prog, argv).run()
        assert r.exit_status == 0
        results.append((json.dumps(r.to_json(), sort_keys=True), m.cpu(0).vector_insns,
                        bytes(m.cpu(0).rvv.v)))
    assert results[0] == results[1]
