"""`emukern reproduce`: run every experiment, print our figures beside the published ones, write plots.

Each experiment is a module in :mod:`emukern.bench` listed in :data:`EXPERIMENTS` with
``TITLE: str`` and ``run(ctx: ReproduceContext) -> dict`` (JSON-able results).  A module that
fails is reported and the others still run; the exit status is non-zero if any failed.

Runs are kept apart and never lose earlier results:

* ``--quick`` writes into ``OUT/quick/`` so a smoke run never overwrites a full run's files;
* ``results.json`` is merged per experiment: ``--only X`` replaces X's entry (and X's PNG) and keeps
  the others, so every PNG in the folder still matches its entry; ``runs`` says for each experiment
  whether it was quick, when it ran (run number), and whether it finished, failed or was interrupted,
  and ``partial`` says whether the file lacks a finished run of some experiment;
* Ctrl-C stops the experiment in progress and still writes what the finished ones produced (exit 130).

Experiments are independent machines, so with ``jobs > 1`` (the CLI's default: one per CPU) they
run in a process pool and the wall time falls with the cores available.  Each worker prints into
its own recording console; the main process prints each experiment's output whole, in the order of
:data:`EXPERIMENTS`, so the report reads the same as a serial run.  The experiments that measure
host speed (:data:`TIMING`) never share the machine: they run alone, after the experiments of the
four changes (the reproduction leads the output; ``host_speed=False`` leaves them out).
"""
from __future__ import annotations

import importlib
import io
import json
import multiprocessing
import sys
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from emukern.report import FitConsole

EXPERIMENTS = [
    "selfbench",            # issue 2: emulator speed vs raw Unicorn (and qemu-user)
    "kernel_core",          # issue 4: context switches, 64-CPU run
    "rvv_unit",             # issue 3: RVV unit speed, vector memcpy vs qemu
    "riscv_vector",         # issue 5: Drew Fustini's sysctl (null_syscall), Andy Chiu's VS_INITIAL (lat_ctx)
    "arm64_mrs",            # issue 6: Mark Rutland's EL0 MRS rework, contention sweep
    "arm64_sve",            # issue 7: Mark Brown's SVE state saving, fp-pidbench and blocking scenario
    "riscv_kmv",            # issue 15: stale vector contexts after kernel-mode vector user copies
    "arm64_sve_upstream",   # issue 14: the upstream fp-pidbench selftest built from linux-source
    "policy_study",         # upstream successors, part 4: the policies on real Debian / RVV programs
]
# experiments whose figures are host time (emukern vs raw Unicorn / qemu-user): they run alone
TIMING = ("selfbench", "rvv_unit")
# an experiment's wall-time estimate when its module gives none (``POOL_SECONDS``): orders the pool
DEFAULT_POOL_SECONDS = 10.0
PNGS = {"riscv_vector": "riscv_vector.png", "arm64_mrs": "arm64_mrs.png", "arm64_sve": "arm64_sve.png",
        "riscv_kmv": "riscv_kmv.png"}


@dataclass
class ReproduceContext:
    out_dir: Path
    quick: bool
    console: Console
    full: bool = False          # real iteration counts (the upstream fp-pidbench's 2.56 M per loop)
    results: dict[str, Any] = field(default_factory=dict)
    jobs: int = 1               # worker processes an experiment run here may use (--jobs)
    # a pointed experiment assembled from the pool's results: [(point, run_point(point)), ...] in
    # pool_points order, and the seconds from the pool's start to its last point's end
    points: list[tuple[Any, Any]] | None = None
    points_wall: float | None = None

    def progress(self) -> Progress:
        """A progress bar for long sweeps (use as a context manager)."""
        return Progress(TextColumn("[progress.description]{task.description}"), BarColumn(),
                        MofNCompleteColumn(), TimeElapsedColumn(), console=self.console, transient=False)


def results_dir(out_dir: Path, quick: bool) -> Path:
    """Where a run writes: quick runs in their own subfolder, apart from full runs."""
    return out_dir / "quick" if quick else out_dir


def _load(path: Path) -> dict[str, Any]:
    try:
        d = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return d if isinstance(d, dict) and isinstance(d.get("runs"), dict) else {}


def write_results(path: Path, ctx: ReproduceContext, status: dict[str, str], quick: bool) -> dict[str, Any]:
    """Merge this run's experiments into ``path`` (see the module docstring) and write it."""
    old = _load(path)
    merged: dict[str, Any] = {k: v for k, v in old.items() if k not in ("runs", "partial", "run_count")}
    runs: dict[str, Any] = dict(old.get("runs", {}))
    n = int(old.get("run_count", 0)) + 1
    for name, st in status.items():
        if name in ctx.results:
            merged[name] = ctx.results[name]
        elif st != "ok":
            merged.pop(name, None)            # a failed/interrupted re-run invalidates the old entry
        runs[name] = {"status": st, "quick": quick, "run": n}
    partial = any(runs.get(e, {}).get("status") != "ok" for e in EXPERIMENTS)
    out = {**merged, "runs": runs, "run_count": n, "partial": partial, "quick": quick}
    path.write_text(json.dumps(out, indent=2, sort_keys=True, default=str) + "\n")
    return out


def _import(name: str) -> Any:
    """The experiment module, or None when it is not built (a missing module, not a broken one)."""
    try:
        return importlib.import_module(f"emukern.bench.{name}")
    except ModuleNotFoundError as exc:
        if exc.name == f"emukern.bench.{name}":
            return None
        raise


def _run_here(name: str, ctx: ReproduceContext) -> str | None:
    """Run one experiment in this process, printing as it goes: its status, None if not built."""
    console = ctx.console
    mod = _import(name)
    if mod is None:
        console.print(f"[dim]{name}: not built yet, skipped[/]")
        return None
    console.rule(f"[bold]{getattr(mod, 'TITLE', name)}")
    png = PNGS.get(name)
    if png:
        (ctx.out_dir / png).unlink(missing_ok=True)   # never leave a PNG from another run beside this entry
    t = time.perf_counter()
    try:
        ctx.results[name] = mod.run(ctx)
    except KeyboardInterrupt:
        console.print(f"[yellow]{name} interrupted: writing the experiments already finished[/]")
        return "interrupted"
    except Exception as exc:  # noqa: BLE001 - one experiment failing must not hide the others
        console.print(f"[red]{name} failed: {type(exc).__name__}: {exc}[/]")
        console.print(traceback.format_exc(limit=4), markup=False)
        return "failed"
    console.print(f"[dim]{name}: {time.perf_counter() - t:.1f} s wall[/]")
    return "ok"


def _run_in_worker(name: str, out_dir: Path, quick: bool, full: bool, width: int,
                   color: bool) -> tuple[str | None, Any, str]:
    """Pool worker: one experiment with a recording console; (status, results, what it printed)."""
    buf = io.StringIO()
    con = FitConsole(file=buf, highlight=False, width=width, force_terminal=color,
                     color_system="standard" if color else None)
    ctx = ReproduceContext(out_dir, quick, con, full=full)
    st = _run_here(name, ctx)
    return st, ctx.results.get(name), buf.getvalue()


def _replay(console: Console, text: str, color: bool) -> None:
    """Print what a worker's recording console captured (its ANSI colours kept)."""
    from rich.text import Text
    body = text.rstrip("\n")
    console.print(Text.from_ansi(body) if color else body, markup=False, highlight=False)


def _stop_pool(ex: ProcessPoolExecutor) -> None:
    procs = list((getattr(ex, "_processes", None) or {}).values())   # shutdown() forgets them
    ex.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        proc.terminate()


def _has_points(mod: Any) -> bool:
    """An experiment made of independent points the pool can schedule one by one."""
    return mod is not None and all(hasattr(mod, a) for a in ("pool_points", "run_point", "point_cost"))


def _offers_points(name: str) -> bool:
    try:
        return _has_points(_import(name))
    except Exception:  # noqa: BLE001 - a broken module is reported when it runs
        return False


def _point_in_worker(name: str, point: Any) -> Any:
    """Pool worker: one point of a pointed experiment (its module's ``run_point``)."""
    return importlib.import_module(f"emukern.bench.{name}").run_point(point)


@dataclass
class _Task:
    """One unit of pool work: a whole experiment (``index`` None) or one point of one."""
    name: str
    index: int | None
    cost: float                       # estimated seconds, for the order of submission only
    future: Future | None = None
    done_at: float | None = None      # perf_counter() when it finished (the pool's own thread)


def _plan(names: list[str], ctx: ReproduceContext) -> tuple[list[_Task], dict[str, list[Any]]]:
    """Every task of ``names`` in submission order: experiments by their estimated total cost,
    longest first, and a pointed experiment's points (tasks of their own) together, longest point
    first.  Kept together, an experiment's points share every worker and it finishes in about
    its total / jobs (arm64_mrs's sweep: not behind the other experiments' whole tasks, as one
    list sorted by task cost had it, whose short points went last); its short last points still
    even out the workers before the next experiment starts."""
    tasks: list[_Task] = []
    points: dict[str, list[Any]] = {}
    for name in names:
        try:
            mod = _import(name)
            if _has_points(mod):
                pts = list(mod.pool_points(ctx))
                tasks += [_Task(name, i, float(mod.point_cost(pt))) for i, pt in enumerate(pts)]
                points[name] = pts
                continue
            cost = float(getattr(mod, "POOL_SECONDS", DEFAULT_POOL_SECONDS))
        except Exception:  # noqa: BLE001 - a broken module: its worker reports the failure
            tasks = [t for t in tasks if t.name != name]
            cost = DEFAULT_POOL_SECONDS
        tasks.append(_Task(name, None, cost))
    total: dict[str, float] = {}
    for t in tasks:
        total[t.name] = total.get(t.name, 0.0) + t.cost
    # stable: equal estimates keep EXPERIMENTS order (and pool_points order within one)
    tasks.sort(key=lambda t: (-total[t.name], -t.cost))
    return tasks, points


def _assemble(name: str, ctx: ReproduceContext, pts: list[Any], results: list[Any], wall: float,
              width: int, color: bool) -> tuple[str | None, Any, str]:
    """A pointed experiment whose points have all finished: its ``run`` builds the tables and
    plot from them (in this process, into a recording console like a worker's)."""
    buf = io.StringIO()
    con = FitConsole(file=buf, highlight=False, width=width, force_terminal=color,
                     color_system="standard" if color else None)
    sub = ReproduceContext(ctx.out_dir, ctx.quick, con, full=ctx.full, jobs=ctx.jobs,
                           points=list(zip(pts, results)), points_wall=wall)
    st = _run_here(name, sub)
    return st, sub.results.get(name), buf.getvalue()


def _failed_point(name: str, pts: list[Any], tasks: list[_Task]) -> tuple[str, None, str] | None:
    """The first failed point of ``name`` as its experiment's failure, or None."""
    for t in tasks:
        exc = t.future.exception() if t.future is not None and t.future.done() and not t.future.cancelled() \
            else None
        if exc is not None and not isinstance(exc, KeyboardInterrupt):
            return ("failed", None, f"{name} failed: point {pts[t.index]!r}: {type(exc).__name__}: {exc}\n")
    return None


def _run_pool(names: list[str], ctx: ReproduceContext, status: dict[str, str], jobs: int) -> bool:
    """Run ``names`` in ``jobs`` worker processes; print each one's output whole, in order.
    Returns True when Ctrl-C stopped it (the finished experiments are kept).

    One pool holds every task: whole experiments, and the points of the experiments that offer
    them (``pool_points``/``run_point``/``point_cost``, e.g. arm64_mrs's (N CPUs, policy)
    machines), submitted as :func:`_plan` orders them, so the wall time tends to max(longest
    task, total / jobs) and a pointed experiment takes about its own total / jobs."""
    console = ctx.console
    color = console.is_terminal
    tasks, points = _plan(names, ctx)
    workers = min(jobs, len(tasks))
    # fork: workers inherit this process's modules (plug-ins loaded from the command line, and the
    # test suite's stand-in experiments); they are started before any progress-bar thread exists
    mp = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
    ex = ProcessPoolExecutor(max_workers=workers, mp_context=mp)
    t_pool = time.perf_counter()
    for t in tasks:
        if t.index is None:
            t.future = ex.submit(_run_in_worker, t.name, ctx.out_dir, ctx.quick, ctx.full, console.width, color)
        else:
            t.future = ex.submit(_point_in_worker, t.name, points[t.name][t.index])

        def stamp(_f: Future, t: _Task = t) -> None:
            t.done_at = time.perf_counter()
        t.future.add_done_callback(stamp)
    by_name: dict[str, list[_Task]] = {n: [t for t in tasks if t.name == n] for n in names}
    n_points = sum(len(p) for p in points.values())
    console.print(f"[dim]running {len(names)} experiments in {workers} worker processes "
                  f"(--jobs {jobs}) as {len(tasks)} tasks"
                  + (f" ({n_points} of them points of {', '.join(points)})" if points else "")
                  + ", longest experiment first; each experiment's output is printed whole when it finishes, in order[/]")
    pending = list(names)

    def take(out: Console, st: str | None, res: Any, text: str) -> None:
        """The first pending experiment has finished: print it, keep its status and results."""
        name = pending.pop(0)
        _replay(out, text, color)
        if st is not None:
            status[name] = st
            if res is not None and st == "ok":
                ctx.results[name] = res

    def finished(name: str) -> tuple[str | None, Any, str] | None:
        """``name``'s (status, results, output) if all its tasks are done, else None."""
        mine = by_name[name]
        if not all(t.future is not None and t.future.done() for t in mine):
            return None
        if name not in points:
            try:
                return mine[0].future.result()          # type: ignore[union-attr]
            except KeyboardInterrupt:
                return ("interrupted", None, f"{name} interrupted\n")
            except Exception as exc:  # noqa: BLE001 - a worker that died is this experiment failing
                return ("failed", None, f"{name} failed: the worker process ended ({exc})\n")
        if any(isinstance(t.future.exception(), KeyboardInterrupt) for t in mine):   # type: ignore[union-attr]
            return ("interrupted", None, f"{name} interrupted\n")
        bad = _failed_point(name, points[name], mine)
        if bad is not None:
            return bad
        order = sorted(mine, key=lambda t: t.index or 0)
        wall = max(t.done_at or time.perf_counter() for t in mine) - t_pool
        return _assemble(name, ctx, points[name], [t.future.result() for t in order],  # type: ignore[union-attr]
                         wall, console.width, color)

    def n_done() -> int:
        return sum(t.future is not None and t.future.done() for t in tasks)

    try:
        with ctx.progress() as progress:
            bar = progress.add_task("experiments", total=len(tasks))
            while pending:
                name = pending[0]
                got = finished(name)
                if got is None:
                    progress.update(bar, completed=n_done(), description=f"experiments (waiting for {name})")
                    wait([t.future for t in by_name[name] if t.future is not None and not t.future.done()],
                         timeout=0.2, return_when=FIRST_COMPLETED)
                    continue
                take(progress.console, *got)
                progress.update(bar, completed=n_done())
    except KeyboardInterrupt:
        started = {t.name for t in tasks if t.future is not None and (t.future.running() or t.future.done())}
        _stop_pool(ex)
        while pending:
            n = pending[0]
            got = None
            if all(t.future is not None and t.future.done() and not t.future.cancelled()
                   and t.future.exception() is None for t in by_name[n]):
                try:
                    got = finished(n)                  # finished but not printed yet: keep it
                except KeyboardInterrupt:
                    got = None
            if got is not None:
                take(console, *got)
            else:
                pending.pop(0)
                if n in started:
                    status[n] = "interrupted"      # queued ones never started: their old entries stay
        console.print("[yellow]interrupted: writing the experiments already finished[/]")
        return True
    ex.shutdown()
    return False


HOST_SPEED_NOTE = ("[dim]Not part of the reproduction: the figures above do not depend on the host. "
                   "A MISSED below means emukern ran slower than its own speed target here "
                   "(a busy or slow host), not that a figure was not reproduced. "
                   "`emukern reproduce --no-host-speed` leaves these out.[/]")


def reproduce(out_dir: Path, quick: bool = False, only: list[str] | None = None, full: bool = False,
              jobs: int = 1, host_speed: bool = True) -> int:
    # tables are wide: when writing to a file or CI log use 120 columns instead of rich's 80; tables
    # fold labels rather than cut numbers (FitConsole) whatever the width
    console = FitConsole(highlight=False, width=None if sys.stdout.isatty() else 120)
    unknown = [n for n in (only or []) if n not in EXPERIMENTS]
    if unknown:
        console.print(f"[red]unknown experiment(s): {', '.join(unknown)}[/]; known: {', '.join(EXPERIMENTS)}")
        return 2
    out = results_dir(out_dir, quick)
    out.mkdir(parents=True, exist_ok=True)
    jobs = max(1, int(jobs or 1))
    ctx = ReproduceContext(out, quick, console, full=full, jobs=jobs)
    status: dict[str, str] = {}
    names = [n for n in EXPERIMENTS if (not only or n in only) and (host_speed or n not in TIMING or n in (only or ()))]
    t0 = time.perf_counter()
    # the reproduction leads; the host-speed benchmarks (TIMING) come after it, alone on the
    # machine as before (the pool has finished), under a heading that says what they are
    timing = [n for n in names if n in TIMING]
    repro = [n for n in names if n not in TIMING]
    pooled = [] if jobs == 1 else repro
    if len(pooled) == 1 and not _offers_points(pooled[0]):
        pooled = []          # nothing to overlap: run it here, with its own live progress bar
    serial = [n for n in repro if n not in pooled]
    interrupted = False

    def run_serial(group: list[str]) -> bool:
        for name in group:
            st = _run_here(name, ctx)
            if st is None:
                continue
            status[name] = st
            if st == "interrupted":
                return True
        return False

    interrupted = run_serial(serial)
    if pooled and not interrupted:
        interrupted = _run_pool(pooled, ctx, status, jobs)
        # a worker stopped by Ctrl-C (the terminal sends SIGINT to the whole process group)
        interrupted = interrupted or "interrupted" in status.values()
    if timing and not interrupted:
        console.rule("[bold]Host speed: how fast emukern runs on this machine")
        console.print(HOST_SPEED_NOTE)
        interrupted = run_serial(timing)
    if not interrupted:
        _print_summary(ctx)
    res = write_results(out / "results.json", ctx, status, quick)
    console.rule()
    kind = ("quick (smaller iteration counts)" if quick else "full") + (
        "; partial: not every experiment has a finished run in this folder" if res["partial"] else "")
    console.print(f"results: {out / 'results.json'}  [{kind}]  (total {time.perf_counter() - t0:.1f} s wall)")
    failed = [n for n, s in status.items() if s == "failed"]
    if failed:
        console.print(f"[red]failed: {', '.join(failed)}[/]")
    if interrupted:
        return 130
    return 1 if failed else 0


def _get(d: Any, *keys: Any) -> Any:
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


# the summary rows of the host-speed benchmarks (the "change" column of summary_rows)
HOST_SPEED_CHANGE = "emukern itself"


def summary_rows(r: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(Linux change, figure, ours, published or target) for every headline figure present in
    ``r``; published figures come from the bench modules' constants, misses are marked."""
    from emukern.bench import arm64_mrs, arm64_sve, riscv_vector, rvv_unit, selfbench
    from emukern.kernel.policies import PATCHES
    rows: list[tuple[str, str, str, str]] = []

    def add(change: str, what: str, ours: Any, theirs: str, fmt: str, ok: bool | None = None) -> None:
        if ours is not None:
            rows.append((change, what, fmt.format(ours) + ("" if ok is None or ok else " MISSED"), theirs))

    null, lat = riscv_vector.SEED_NULL, riscv_vector.SEED_LATCTX
    add(PATCHES["riscv-vstate-sysctl"].short, "null_syscall cost, discard 0 -> 1 (VLEN 512, DLEN = VLEN)",
        _get(r, "riscv_vector", "comparison", "null_ratio_emulator"),
        f"x{null[1] / null[0]:.3f} (X280: {null[0]} -> {null[1]} ns)", "x{:.3f}")
    add(PATCHES["riscv-discard"].short, "lat_ctx cycles per switch, eager -> deferred (discard 1, VLEN 512)",
        _get(r, "riscv_vector", "comparison", "lat_change_pct_emulator"),
        f"{100 * (lat['deferred'] / lat['eager'] - 1):+.2f} % (FPGA: {lat['eager']:.2f} -> {lat['deferred']:.2f})",
        "{:+.2f} %")
    real = arm64_mrs.SEED_REAL
    top = max(arm64_mrs.THREADS)
    add(PATCHES["arm64-mrs"].short, f"real time 1 -> {top} threads, hook-list (before)",
        _get(r, "arm64_mrs", "growth_before"),
        f"x{real['hook-list'][top] / real['hook-list'][1]:.1f} (target >= x{arm64_mrs.TARGET_BEFORE_GROWTH:g})",
        "x{:.1f}", _get(r, "arm64_mrs", "target_before_ok"))
    add(PATCHES["arm64-mrs"].short, f"real time 1 -> {top} threads, try_emulate_mrs (after)",
        _get(r, "arm64_mrs", "growth_after"),
        f"x{real['direct'][top] / real['direct'][1]:.2f} (target <= x{arm64_mrs.TARGET_AFTER_GROWTH:g})",
        "x{:.2f}", _get(r, "arm64_mrs", "target_after_ok"))
    pub = arm64_sve.PUBLISHED
    sve = PATCHES["arm64-sve"].short
    add(sve, "getpid overhead after SVE use, legacy (VL 128)",
        _get(r, "arm64_sve", "summary", "128", "overhead_after_use"), f"~{pub['overhead_after_use_128']:g} %",
        "{:.1f} %")
    add(sve, "p1+p2 gain once sve_timeout passed (VL 128)",
        _get(r, "arm64_sve", "summary", "128", "p2_gain_after_timeout"), f"~{pub['p2_gain_after_timeout_128']:g} %",
        "{:.1f} %")
    add(sve, "p1+p2 overhead with SVE before every syscall (VL 128)",
        _get(r, "arm64_sve", "summary", "128", "p2_overhead_per_syscall"),
        f"~{pub['p2_overhead_per_syscall_128']:g} %", "{:.2f} %")
    add(sve, "real programs, legacy: FPSIMD-only loads followed by another SVE trap",
        _get(r, "policy_study", "arm64", "overall", "legacy", "retrap_pct"),
        f"most tasks > {pub['retrap_majority_pct']:g} % (Debian bookworm boot)", "{:.0f} %")
    for arch in ("riscv64", "arm64"):
        add(HOST_SPEED_CHANGE, f"{arch}: emukern MIPS / raw Unicorn MIPS",
            _get(r, "selfbench", "arches", arch, "mips_ratio"), f"target >= {selfbench.TARGET_MIPS_RATIO:g}",
            "{:.2f}", _get(r, "selfbench", "arches", arch, "mips_target_met"))
        add(HOST_SPEED_CHANGE, f"{arch}: emukern syscall / raw in-hook syscall",
            _get(r, "selfbench", "arches", arch, "syscall_ratio"), f"target <= {selfbench.TARGET_SYSCALL_RATIO:g}x",
            "{:.1f}x", _get(r, "selfbench", "arches", arch, "syscall_target_met"))
    add(HOST_SPEED_CHANGE, "RVV: worst us per m1 vector instruction through the trap path",
        _get(r, "rvv_unit", "worst_m1_trap_path_us"), f"target <= {rvv_unit.TARGET_US_M1:g} us", "{:.2f} us",
        _get(r, "rvv_unit", "trap_path_meets_target"))
    return rows


def _print_summary(ctx: ReproduceContext) -> None:
    """The headline figure of every Linux change beside the published one; then, apart, the
    host-speed targets, whose misses are this host's speed, not a figure that failed to reproduce."""
    from rich.table import Table
    rows = summary_rows(ctx.results)
    if not rows:
        return
    changes = [r for r in rows if r[0] != HOST_SPEED_CHANGE]
    host = [r for r in rows if r[0] == HOST_SPEED_CHANGE]
    ctx.console.rule()
    if changes:
        t = Table(title="Summary: our figures beside the published ones (details, sources and caveats above)"
                  + (" — quick run" if ctx.quick else ""))
        for c in ("Linux change", "figure", "emukern", "published / target"):
            t.add_column(c, overflow="fold")
        for row in changes:
            t.add_row(*row)
        ctx.console.print(t)
    if host:
        h = Table(title="Host speed on this machine (not part of the reproduction)")
        for c in ("figure", "emukern here", "target"):
            h.add_column(c, overflow="fold")
        for row in host:
            h.add_row(row[1], row[2].replace(" MISSED", " (below target on this host)"), row[3])
        ctx.console.print(h)
