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

import re
import time
from pathlib import Path
from typing import Any

from emukern.selftests.build import PIDBENCH_ITERS, PIDBENCH_REAL, Builder
from emukern.selftests.runner import parse_pidbench

LOOPS = ("No SVE", "SVE used once", "SVE used per syscall")

# Stored upstream copies of fp-pidbench.S (the seeds-upstream folder, see its README section D),
# newest first: 76e9f683 is the for-next/core merge that carries "kselftest/arm64: Add a no-SVE
# loop after SVE in fp-pidbench" and "Raise default number of loops" (Mark Brown, 2026-01); a94e42b1
# is the file before them.  The commit ids cannot be ordered from the files themselves.
UPSTREAM_NEWEST_FIRST = ("76e9f683a53186775af1610b734b51383a17eb70",
                         "a94e42b12c906f14ba9e701db7604fba0383d0f4")
UPSTREAM_NAME = "src-torvalds-linux-{c8}-tools-testing-selftests-arm64-fp-fp-pidbench.S"
# the default (not --full) getpid calls per loop: the count the 6.12 build has always run, so a
# loop still spans about one simulated second (the sve_timeout) at the experiment's frequency
DEFAULT_PER_LOOP = PIDBENCH_ITERS << 8
_SHIFT = re.compile(r"^\s*lsl\s+x20,\s*x20,\s*#(\d+)\s*$", re.M)
_PHASE = re.compile(r'puts\s+"([^"]+):\s*"\s*\n\s*test_loop\b')


def newest_upstream() -> tuple[Path, str] | None:
    """(the newest stored upstream fp-pidbench.S, its commit), or None when none is stored."""
    from emukern.selftests.build import UPSTREAM_DIR
    for commit in UPSTREAM_NEWEST_FIRST:
        f = UPSTREAM_DIR / UPSTREAM_NAME.format(c8=commit[:8])
        if f.exists():
            return f, commit
    return None


def loops_of(text: str) -> tuple[tuple[str, ...], int]:
    """The timed loops an fp-pidbench.S prints, in order, and its ``lsl x20`` shift: read from the
    source, because the versions differ in both (three loops and << 8, then five and << 12)."""
    m = _SHIFT.search(text)
    return tuple(_PHASE.findall(text)), int(m.group(1)) if m else 8


def build_newest(full: bool = False, fetch: bool = True, per_loop: int = DEFAULT_PER_LOOP) -> dict[str, Any]:
    """Build the newest fp-pidbench that can be had: a stored upstream copy, else the Linux tree's.

    Without ``full`` the ``mov x20, #10000`` is scaled so a loop has about ``per_loop`` getpid
    calls (the newest source's shift of 12 makes 40,960,000 a loop: hours here).  Returns the ELF
    (None with the reason in ``what``), what ran, its loops, the calls per loop and the real count."""
    from emukern.errors import EmukernError
    from emukern.selftests.source import fetch_debian, source_cache
    up = newest_upstream()
    try:
        if not fetch and not any(source_cache().glob("*/.emukern-unpacked")):
            return {"elf": None, "what": "no Linux source in the cache (run `emukern selftests` once to fetch it)"}
        src = fetch_debian()
    except EmukernError as exc:
        return {"elf": None, "what": exc.message}
    path = up[0] if up else src.selftests / "arm64" / "fp" / "fp-pidbench.S"
    try:
        loops, shift = loops_of(path.read_text())
    except OSError as exc:
        return {"elf": None, "what": f"{path}: {exc.strerror}"}
    iters = PIDBENCH_REAL if full else max(1, round(per_loop / (1 << shift)))
    built = Builder(src).pidbench(iters, source=path if up else None, tag=up[1][:8] if up else "")
    if not built.ok:
        return {"elf": None, "what": built.reason}
    origin = (f"upstream fp-pidbench.S of torvalds/linux {up[1]} ({path.name}), assembled with Linux "
              f"{src.version}'s assembler.h/asm-utils.o" if up else f"upstream fp-pidbench.S from {src.origin}")
    real = PIDBENCH_REAL << shift
    scaled = ("" if full else f"; iteration count scaled down: mov x20, #{PIDBENCH_REAL} -> #{iters} "
              f"({iters << shift:,} getpid calls per loop instead of {real:,}; --full runs the real count)")
    return {"elf": built.path, "what": origin + scaled, "file": str(path), "commit": up[1] if up else None,
            "loops": loops, "per_loop": iters << shift, "real_per_loop": real, "scaled": not full}


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


def parse_loops(out: str, loops: tuple[str, ...]) -> dict[str, int]:
    """fp-pidbench's "<label>: <number>" lines for the given labels plus the count and the VL."""
    want = ("Iterations per test", "SVE VL", *loops)
    f = {}
    for line in out.splitlines():
        label, sep, num = line.partition(":")
        if sep and label in want and num.strip().isdigit():
            f[label] = int(num)
    return f


def run_pidbench(elf: Path, policy: str, vl: int, freq: int, hz: int,
                 loops: tuple[str, ...] = LOOPS) -> dict[str, Any]:
    from emukern.api import Machine
    m = Machine(arch="arm64", sve_vl=vl, policies={"arm64-sve": policy}, freq_hz=freq, hz=hz, timer_freq=freq)
    m.load(elf)
    t0 = time.perf_counter()
    r = m.run()
    wall = time.perf_counter() - t0
    if r.exit_status != 0:
        raise RuntimeError(f"fp-pidbench exited with {r.exit_status} ({policy}, VL {vl}): {r.message}")
    text = r.stdout.decode("utf-8", "replace")
    f = parse_pidbench(text) if loops == LOOPS else parse_loops(text, loops)
    n = f.get("Iterations per test", 0)
    missing = [lp for lp in loops if lp not in f]
    if missing or not n:
        raise RuntimeError(f"fp-pidbench printed no {missing or 'iteration count'}: {r.stdout[-200:]!r}")
    per = {lp: f[lp] / n for lp in loops}
    return {"policy": policy, "vl": vl, "guest_vl_bytes": f.get("SVE VL"), "iterations": n,
            "ticks": {lp: f[lp] for lp in loops}, "cycles_per_getpid": per,
            "overhead_once_pct": 100.0 * (per["SVE used once"] - per["No SVE"]) / per["No SVE"],
            "overhead_per_syscall_pct": 100.0 * (per["SVE used per syscall"] - per["No SVE"]) / per["No SVE"],
            "sve_traps": r.traps.get("sve-access", 0), "getpid_calls": r.syscalls.get("getpid", 0),
            "sim_seconds": r.sim_seconds, "wall_seconds": wall}
