"""The upstream fp-pidbench (tools/testing/selftests/arm64/fp/fp-pidbench.S) under emukern.

The benchmark the published SVE figures ("arm64/sve: performance improvements with SVE state
saving" by Mark Brown) come from: a getpid loop timed with CNTVCT_EL0, run with SVE never used,
after one SVE instruction, and with an SVE instruction before every syscall.  It is built from the
Linux source by :mod:`emukern.selftests.build`; by default with its iteration count substituted
(``mov x20, #10000`` -> ``#100``: 25,600 getpid calls per loop instead of 2,560,000), ``full``
runs the unmodified binary.

The machine runs at a low CPU frequency with CNTVCT counting CPU cycles (as the SVE experiment in
emukern.bench.arm64_sve does), so the guest's own tick counts are cycles and the 1 s sve_timeout
of the patch is crossed inside a loop of the default build.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from emukern.selftests.build import PIDBENCH_ITERS, PIDBENCH_REAL, Builder
from emukern.selftests.runner import parse_pidbench

LOOPS = ("No SVE", "SVE used once", "SVE used per syscall")


def build(full: bool = False, fetch: bool = True) -> tuple[Path | None, str, int]:
    """(ELF, where it came from, getpid calls per loop) — ELF None with the reason in ``where``."""
    from emukern.errors import EmukernError
    from emukern.selftests.source import fetch_debian, source_cache
    iters = PIDBENCH_REAL if full else PIDBENCH_ITERS
    try:
        if not fetch and not any(source_cache().glob("*/.emukern-unpacked")):
            return None, "no Linux source in the cache (run `emukern selftests` once to fetch it)", 0
        src = fetch_debian()
        built = Builder(src).pidbench(iters)
    except EmukernError as exc:
        return None, exc.message, 0
    if not built.ok:
        return None, built.reason, 0
    what = (f"upstream fp-pidbench.S from {src.origin}" +
            ("" if full else f", iteration count substituted: mov x20, #{PIDBENCH_REAL} -> #{iters}"))
    return built.path, what, iters << 8


def run_pidbench(elf: Path, policy: str, vl: int, freq: int, hz: int) -> dict[str, Any]:
    from emukern.api import Machine
    m = Machine(arch="arm64", sve_vl=vl, policies={"arm64-sve": policy}, freq_hz=freq, hz=hz, timer_freq=freq)
    m.load(elf)
    t0 = time.perf_counter()
    r = m.run()
    wall = time.perf_counter() - t0
    if r.exit_status != 0:
        raise RuntimeError(f"fp-pidbench exited with {r.exit_status} ({policy}, VL {vl}): {r.message}")
    f = parse_pidbench(r.stdout.decode("utf-8", "replace"))
    n = f.get("Iterations per test", 0)
    missing = [lp for lp in LOOPS if lp not in f]
    if missing or not n:
        raise RuntimeError(f"fp-pidbench printed no {missing or 'iteration count'}: {r.stdout[-200:]!r}")
    per = {lp: f[lp] / n for lp in LOOPS}
    return {"policy": policy, "vl": vl, "guest_vl_bytes": f.get("SVE VL"), "iterations": n,
            "ticks": {lp: f[lp] for lp in LOOPS}, "cycles_per_getpid": per,
            "overhead_once_pct": 100.0 * (per["SVE used once"] - per["No SVE"]) / per["No SVE"],
            "overhead_per_syscall_pct": 100.0 * (per["SVE used per syscall"] - per["No SVE"]) / per["No SVE"],
            "sve_traps": r.traps.get("sve-access", 0), "getpid_calls": r.syscalls.get("getpid", 0),
            "sim_seconds": r.sim_seconds, "wall_seconds": wall}
