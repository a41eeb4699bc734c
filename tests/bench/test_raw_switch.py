"""The floor under the pipe round-trip figures (emukern/bench/raw_switch.py): lat_ctx on raw
Unicorn runs to the end on both architectures in both ways of holding the two tasks, with the
guest's own check passing (exit status 0) and the right number of round trips; and the bench
prints it beside emukern's lat_ctx figure.  Tiny counts, never a timed assertion."""
from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from emukern.api import Machine
from emukern.bench import raw_switch as RS

N = 12


@pytest.mark.parametrize("mode", RS.MODES)
@pytest.mark.parametrize("arch", ["riscv64", "arm64"])
def test_floor_runs_lat_ctx(arch: str, mode: str) -> None:
    r = RS.raw_switch_run(arch, N, mode)
    assert r.exit_status == 0
    assert r.round_trips == N
    # every round trip blocks each side once: two switches, and the child's exit wakes the parent
    assert N * 2 <= r.switches <= N * 2 + 2
    assert r.engines == (2 if mode == "processes" else 1)
    assert r.cpu_s > 0
    # the per-round-trip figure is a difference of two CPU times: at these tiny counts its sign
    # is noise (a CI run saw -19 us), so only its being a number is checked here
    us = RS.raw_switch_us(arch, mode, 10, 80)
    assert isinstance(us, float) and math.isfinite(us)


@pytest.mark.parametrize("arch", ["riscv64", "arm64"])
def test_floor_runs_what_emukern_runs(arch: str) -> None:
    """The same ELF and count under emukern: the same exit status, the same syscalls per trip."""
    r = Machine(arch=arch, max_insns=None).load(RS.lat_ctx_elf(arch), [str(N)]).run()
    assert r.exit_status == 0
    assert r.syscalls["read"] == r.syscalls["write"] == 2 * N


def test_floor_rejects_an_unknown_mode() -> None:
    with pytest.raises(ValueError):
        RS.raw_switch_run("riscv64", 1, "fibres")


def test_bench_prints_the_floor_figure(tmp_path) -> None:
    out = tmp_path / "switch.json"
    p = subprocess.run([sys.executable, "-m", "emukern.cli", "bench", "--only", "switch", "--quick", "--reps", "1",
                        "--json", str(out)], capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "raw Unicorn floor" in p.stdout and "lat_ctx.S pipe" in p.stdout
    figs = {f["key"]: f for f in json.loads(out.read_text())["figures"]}
    for arch in ("riscv64", "arm64"):
        f = figs[f"{arch}.switch_floor"]
        assert f["figure"] == f"{arch} lat_ctx.S pipe round trip between processes (CPU per iteration)"
        assert f["target"] is None and f["unit"] == "µs"
        c = f["contenders"]
        for who in ("emukern", RS_NAMES[0], RS_NAMES[1]):
            # (a difference of two CPU times at quick counts: its sign is noise, not checked)
            assert c[who]["n"] == 1 and math.isfinite(c[who]["median"]), (who, c[who])
        assert "qemu-user" in c
        # the figures that were there before keep their keys
        for key in ("switch_proc", "switch_thread", "fork"):
            assert f"{arch}.{key}" in figs


RS_NAMES = ("raw Unicorn floor", "raw Unicorn floor (one engine, register-file swap)")
