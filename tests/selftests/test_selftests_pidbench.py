"""reproduce's arm64_sve_upstream experiment: the upstream fp-pidbench built from the Linux
source (count substituted), and the fallback message when no source is there."""
from __future__ import annotations

import shutil

import pytest
from rich.console import Console

from emukern.bench import arm64_sve_upstream as U
from emukern.bench.reproduce import EXPERIMENTS, ReproduceContext


def _ctx(tmp_path, quick=True):
    out = open(tmp_path / "out.txt", "w")
    return ReproduceContext(tmp_path, quick, Console(file=out, width=200)), tmp_path / "out.txt"


def test_registered():
    assert "arm64_sve_upstream" in EXPERIMENTS


def test_fallback_without_source(tmp_path, monkeypatch):
    monkeypatch.setenv("EMUKERN_CACHE", str(tmp_path / "empty-cache"))
    ctx, out = _ctx(tmp_path)
    res = U.run(ctx)
    ctx.console.file.flush()
    assert res["ran"].startswith("guest_asm/arm64/fp_pidbench.S")
    assert "fallback" in out.read_text()


def test_upstream_with_small_count(tmp_path, monkeypatch):
    from emukern.selftests.source import source_cache
    if not any(source_cache().glob("*/.emukern-unpacked")):
        pytest.skip("linux-source-6.12 is not in the cache (run `emukern selftests` once)")
    if shutil.which("aarch64-linux-gnu-gcc") is None:
        pytest.skip("aarch64-linux-gnu-gcc is not installed")
    import emukern.selftests.pidbench as P
    # the Linux tree's own (6.12) fp-pidbench: no stored upstream copy; --quick runs a third of
    # DEFAULT_PER_LOOP: mov x20, #10 -> 2,560 getpid calls per loop
    monkeypatch.setattr(P, "newest_upstream", lambda: None)
    monkeypatch.setattr(P, "DEFAULT_PER_LOOP", 3 * 2560)
    ctx, out = _ctx(tmp_path)
    res = U.run(ctx)
    assert "mov x20, #10000 -> #10" in res["ran"] and res["getpid_per_loop"] == 2560
    rows = {r["policy"]: r for r in res["runs"]}
    assert set(rows) == set(U.POLICIES)
    for r in rows.values():
        assert r["getpid_calls"] == 3 * 2560 and r["vl"] == 128 and r["guest_vl_bytes"] == 128
        c = r["cycles_per_getpid"]
        # SVE used before every syscall costs more than never using it, under every policy
        assert c["SVE used per syscall"] > c["No SVE"]
    # 2,560 calls x ~170 cycles at 1 MHz is well under the 1 s sve_timeout: p1+p2 still flushes
    assert rows["p1+p2"]["cycles_per_getpid"]["SVE used once"] > rows["p1+p2"]["cycles_per_getpid"]["No SVE"]
