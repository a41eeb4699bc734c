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
]


@dataclass
class ReproduceContext:
    out_dir: Path
    quick: bool
    console: Console
    results: dict[str, Any] = field(default_factory=dict)

    def progress(self) -> Progress:
        """A progress bar for long sweeps (use as a context manager)."""
        return Progress(TextColumn("[progress.description]{task.description}"), BarColumn(),
                        MofNCompleteColumn(), TimeElapsedColumn(), console=self.console, transient=False)


def reproduce(out_dir: Path, quick: bool = False, only: list[str] | None = None) -> int:
    # tables are wide: when writing to a file or CI log use 120 columns instead of rich's 80
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 120)
    out_dir.mkdir(parents=True, exist_ok=True)
    ctx = ReproduceContext(out_dir, quick, console)
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
    (out_dir / "results.json").write_text(json.dumps(ctx.results, indent=2, sort_keys=True, default=str) + "\n")
    console.rule()
    console.print(f"results: {out_dir / 'results.json'}  (total {time.perf_counter() - t0:.1f} s wall)")
    if failed:
        console.print(f"[red]failed: {', '.join(failed)}[/]")
        return 1
    return 0
