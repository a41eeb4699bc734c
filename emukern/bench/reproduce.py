"""`emukern reproduce`: run every experiment, print our figures beside the seeds', write plots.

Each experiment is a module in :mod:`emukern.bench` listed in :data:`EXPERIMENTS` with
``TITLE: str`` and ``run(ctx: ReproduceContext) -> dict`` (JSON-able results).  A module that
fails is reported and the others still run; the exit status is non-zero if any failed.
"""
from __future__ import annotations

import importlib
import json
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

EXPERIMENTS = [
    "selfbench",            # issue 2: emulator speed vs raw Unicorn (and qemu-user)
    "kernel_core",          # issue 4: context switches, 64-CPU run
    "rvv_unit",             # issue 3: RVV unit speed, vector memcpy vs qemu
    "riscv_vector",         # issue 5: seeds 000 (null_syscall) and 003 (lat_ctx)
    "arm64_mrs",            # issue 6: seed 001 contention sweep
    "arm64_sve",            # issue 7: seed 004 fp-pidbench and blocking scenario
    "arm64_sve_upstream",   # issue 14: the upstream fp-pidbench selftest built from linux-source
]


@dataclass
class ReproduceContext:
    out_dir: Path
    quick: bool
    console: Console
    full: bool = False          # real iteration counts (the upstream fp-pidbench's 2.56 M per loop)
    results: dict[str, Any] = field(default_factory=dict)

    def progress(self) -> Progress:
        """A progress bar for long sweeps (use as a context manager)."""
        return Progress(TextColumn("[progress.description]{task.description}"), BarColumn(),
                        MofNCompleteColumn(), TimeElapsedColumn(), console=self.console, transient=False)


def reproduce(out_dir: Path, quick: bool = False, only: list[str] | None = None, full: bool = False) -> int:
    # tables are wide: when writing to a file or CI log use 120 columns instead of rich's 80
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 120)
    out_dir.mkdir(parents=True, exist_ok=True)
    ctx = ReproduceContext(out_dir, quick, console, full=full)
    failed: list[str] = []
    names = [n for n in EXPERIMENTS if not only or n in only]
    unknown = [n for n in (only or []) if n not in EXPERIMENTS]
    if unknown:
        console.print(f"[red]unknown experiment(s): {', '.join(unknown)}[/]; known: {', '.join(EXPERIMENTS)}")
        return 2
    t0 = time.perf_counter()
    for name in names:
        try:
            mod = importlib.import_module(f"emukern.bench.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"emukern.bench.{name}":
                console.print(f"[dim]{name}: not built yet, skipped[/]")
                continue
            raise
        console.rule(f"[bold]{getattr(mod, 'TITLE', name)}")
        t = time.perf_counter()
        try:
            ctx.results[name] = mod.run(ctx)
        except Exception as exc:  # noqa: BLE001 - one experiment failing must not hide the others
            failed.append(name)
            console.print(f"[red]{name} failed: {type(exc).__name__}: {exc}[/]")
            console.print(traceback.format_exc(limit=4), markup=False)
            continue
        console.print(f"[dim]{name}: {time.perf_counter() - t:.1f} s wall[/]")
    _print_summary(ctx)
    (out_dir / "results.json").write_text(json.dumps(ctx.results, indent=2, sort_keys=True, default=str) + "\n")
    console.rule()
    console.print(f"results: {out_dir / 'results.json'}  (total {time.perf_counter() - t0:.1f} s wall)")
    if failed:
        console.print(f"[red]failed: {', '.join(failed)}[/]")
        return 1
    return 0


def _get(d: Any, *keys: Any) -> Any:
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def _print_summary(ctx: ReproduceContext) -> None:
    """One table with the headline figure of every experiment beside the seed's."""
    from rich.table import Table
    r = ctx.results
    rows: list[tuple[str, str, str, str]] = []

    def add(seed: str, what: str, ours: Any, theirs: str, fmt: str) -> None:
        if ours is not None:
            rows.append((seed, what, fmt.format(ours), theirs))

    add("000", "null_syscall cost, discard 0 -> 1 (VLEN 512, DLEN = VLEN)",
        _get(r, "riscv_vector", "comparison", "null_ratio_emulator"), "x1.326 (X280)", "x{:.3f}")
    add("003", "lat_ctx cycles per switch, eager -> deferred (discard 1, VLEN 512)",
        _get(r, "riscv_vector", "comparison", "lat_change_pct_emulator"), "-6.78 % (FPGA)", "{:+.2f} %")
    add("001", "real time 1 -> 64 threads, hook-list (before)",
        _get(r, "arm64_mrs", "growth_before"), "x225.5", "x{:.1f}")
    add("001", "real time 1 -> 64 threads, try_emulate_mrs (after)",
        _get(r, "arm64_mrs", "growth_after"), "x1.38", "x{:.2f}")
    add("004", "getpid overhead after SVE use, legacy (VL 128)",
        _get(r, "arm64_sve", "summary", "128", "overhead_after_use"), "~6 %", "{:.1f} %")
    add("004", "p1+p2 gain once sve_timeout passed (VL 128)",
        _get(r, "arm64_sve", "summary", "128", "p2_gain_after_timeout"), "~4.5 %", "{:.1f} %")
    add("004", "p1+p2 overhead with SVE before every syscall (VL 128)",
        _get(r, "arm64_sve", "summary", "128", "p2_overhead_per_syscall"), "~0.4 %", "{:.2f} %")
    for arch in ("riscv64", "arm64"):
        add("-", f"{arch}: emukern MIPS / raw Unicorn MIPS",
            _get(r, "selfbench", "arches", arch, "mips_ratio"), "target >= 0.25", "{:.2f}")
        add("-", f"{arch}: emukern syscall / raw in-hook syscall",
            _get(r, "selfbench", "arches", arch, "syscall_ratio"), "target <= 3x", "{:.1f}x")
    add("-", "RVV: worst us per m1 vector instruction through the trap path",
        _get(r, "rvv_unit", "worst_m1_trap_path_us"), "target <= 5 us", "{:.2f} us")
    if not rows:
        return
    t = Table(title="Summary: our figures beside the seeds' (details and caveats above)")
    for c in ("seed", "figure", "emukern", "seed / target"):
        t.add_column(c)
    for row in rows:
        t.add_row(*row)
    ctx.console.rule()
    ctx.console.print(t)
