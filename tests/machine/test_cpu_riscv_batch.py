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
    ("vec_loop.S", ["50", "16", "0"], {}),          # the bench's loops (specialised executors)
    ("vec_loop.S", ["50", "16", "1"], {}),
    ("vec_loop.S", ["50", "19", "1"], {"hz": 100_000}),
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


def test_xregs_cache_follows_writes_and_forget(guest_asm):
    """The unit's scalar-register view caches reads within a batch; its own writes update the
    cache (masked to 64 bits) and forget() drops what another writer may have changed."""
    m = Machine().load(guest_asm / "riscv" / "vec_loop.S", ["1"])
    cpu = m.cpu(0)
    xr = cpu._xregs
    cpu.set_reg(10, 0x1234)
    xr.forget()
    assert xr.read(10) == 0x1234
    cpu.set_reg(10, 0x5678)                   # e.g. the kernel, between batches
    assert xr.read(10) == 0x1234              # still the batch's cached value ...
    xr.forget()
    assert xr.read(10) == 0x5678              # ... until the next batch starts
    xr.write(11, -1)
    assert xr.read(11) == (1 << 64) - 1 == cpu.reg(11)
    xr.write(0, 7)
    assert xr.read(0) == 0
