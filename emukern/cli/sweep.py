"""`emukern sweep SPEC.toml`: the command line of :mod:`emukern.sweep`."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from emukern.errors import ConfigError

HELP = """\
Run every point of a sweep spec (a TOML grid over programs and `emukern run` options), each point
one deterministic `emukern run` with the same options and the same JSON.  Points run on a local
process pool (all cores) or on a Dask distributed cluster (--scheduler).  A content-addressed cache
(program bytes + resolved options + cost table + emukern version) answers points already run, here
or by another sweep or machine sharing --cache.  Results: OUT/results.csv and results.parquet (one
row per point, every counter a column), OUT/points/*.json and a PNG per swept axis.  Ctrl-C stops
the sweep and keeps the finished points; a failing point is reported and the others complete.

spec example (sweep.toml):
  [sweep]
  programs = ["guest_asm/riscv/syscall_loop.S"]
  args = ["2000"]
  [grid]
  vlen = [128, 256, 512]
  policy = ["riscv-discard=eager", "riscv-discard=deferred"]
  sysctl = ["abi.riscv_v_vstate_discard=0", "abi.riscv_v_vstate_discard=1"]

examples:
  emukern sweep sweep.toml                       # local pool, results in sweep-out/
  emukern sweep sweep.toml --workers 1 --no-cache
  emukern sweep sweep.toml --scheduler tcp://10.0.0.5:8786
"""


def add_sweep_command(sub: Any) -> None:
    s = sub.add_parser("sweep", help="run a grid of runs on all cores or a Dask cluster, cached",
                       description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("spec", help="the TOML sweep spec")
    s.add_argument("--out", default="sweep-out", help="directory for the results (default sweep-out)")
    s.add_argument("--workers", type=int, default=None, metavar="N",
                   help="local pool size (default: one per core)")
    s.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="run on this Dask distributed scheduler")
    s.add_argument("--cache", metavar="DIR", help="result cache directory (default ~/.cache/emukern/results)")
    s.add_argument("--no-cache", action="store_true", help="run every point, store nothing")
    s.add_argument("--dry-run", action="store_true", help="list the points and stop")
    s.add_argument("--no-plots", action="store_true",
                   help="write the tables (CSV, Parquet, JSON) but draw no PNG (a PNG whose data did not "
                        "change since it was drawn into the same --out is kept, not drawn again)")
    s.set_defaults(func=cmd_sweep)


def cmd_sweep(a: argparse.Namespace) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from emukern.report import stderr_console
    from emukern.sweep.cache import default_cache_dir
    from emukern.sweep.results import write_results
    from emukern.sweep.runner import DaskExecutor, LocalExecutor, run_sweep
    from emukern.sweep.spec import load_spec
    spec = load_spec(a.spec)
    con = stderr_console()
    if a.dry_run:
        for i, p in enumerate(spec.points):
            print(f"{i:4d}  {p.label()}  {' '.join(p.argv())}")
        return 0
    if a.workers is not None and a.workers < 1:
        raise ConfigError("--workers must be at least 1")
    from emukern.sweep import check_sweep_extra
    check_sweep_extra(scheduler=bool(a.scheduler))
    cache_dir = None if a.no_cache else str(Path(a.cache) if a.cache else default_cache_dir())
    ex = DaskExecutor(a.scheduler) if a.scheduler else LocalExecutor(a.workers)
    con.print(f"sweep {spec.name}: {len(spec.points)} point(s) on {ex.description}"
              + ("" if cache_dir else ", cache off"))
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[status]}"), TimeElapsedColumn(), console=con,
                  disable=not con.is_terminal) as prog:
        tid = prog.add_task("points", total=len(spec.points), status="")
        counts = {"ran": 0, "cached": 0, "failed": 0}

        def done(rec: dict[str, Any]) -> None:
            counts["failed" if not rec["ok"] else "cached" if rec["cached"] else "ran"] += 1
            prog.update(tid, advance=1, status=f"{counts['ran']} ran, {counts['cached']} cached, "
                                                f"{counts['failed']} failed")
            if not rec["ok"]:
                prog.console.print(f"[red]point {rec['index']} failed[/]: {rec['label']}: {rec['error']}")

        run = run_sweep(spec.points, ex, cache_dir, on_done=done)
    files = write_results(run.records, spec.axes, Path(a.out), partial=run.interrupted,
                          plots=not a.no_plots)
    _print_table(run.records, spec.axes, con)
    con.print(f"{len(run.records)}/{len(spec.points)} point(s): {counts['ran']} ran, "
              f"{counts['cached']} from the cache, {counts['failed']} failed"
              + (" — interrupted: finished points kept" if run.interrupted else ""))
    for what, path in files.items():
        con.print(f"  {what}: {path}")
    if run.interrupted:
        return 130
    return 1 if run.failed else 0


def _print_table(records: list[dict[str, Any]], axes: list[str], con: Any) -> None:
    from rich.table import Table
    from emukern.sweep.results import compact_axis
    t = Table(title="sweep results")
    t.add_column("#", justify="right")
    shown = {}
    for ax in axes:
        header, show = compact_axis(ax, [r["axes"].get(ax, "") for r in records])
        shown[ax] = show
        width = max([len(header)] + [len(show(r["axes"].get(ax, ""))) for r in records[:200]])
        t.add_column(header, overflow="fold", min_width=min(width, 24))
    for col in ("status", "user insns", "kernel cycles", "cycles"):
        t.add_column(col, justify="right", no_wrap=True)
    for r in records[:200]:
        res = r.get("result") or {}
        axv = [shown[ax](r["axes"].get(ax, "")) for ax in axes]
        status = (f"{res.get('stop_reason')} {res.get('exit_status')}" + (" (cached)" if r["cached"] else "")
                  if r["ok"] else "[red]failed[/]")
        t.add_row(str(r["index"]), *axv, status, f"{res.get('user_insns', 0):,}" if r["ok"] else "",
                  f"{res.get('kernel_cycles', 0):,}" if r["ok"] else "", f"{res.get('cycles', 0):,}" if r["ok"] else "")
    con.print(t)
    if len(records) > 200:
        con.print(f"(first 200 of {len(records)} points; all are in results.csv)")
