"""Running sweep points: one point is one `emukern run`, on a process pool or a Dask cluster."""
from __future__ import annotations

import argparse
import os
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from emukern.errors import ConfigError, EmukernError
from emukern.sweep.cache import ResultCache, point_key
from emukern.sweep.spec import Point, parse_point_args


def run_parser() -> argparse.ArgumentParser:
    """`emukern run`'s arguments (emukern.options), so a point's options mean what they mean there."""
    from emukern.options import run_parser as parser
    return parser()


def run_point(point: Point, cache_dir: str | None, index: int = 0) -> dict[str, Any]:
    """Run one point (or answer it from the cache).  Never raises: a failure is a record.

    Module-level, so process pools and Dask workers can pickle it."""
    rec: dict[str, Any] = {"index": index, "label": point.label(), "program": point.program, "args": list(point.args),
                           "axes": {k: (list(v) if isinstance(v, tuple) else v) for k, v in point.axes},
                           "options": point.argv(), "ok": False, "cached": False, "error": None,
                           "worker": os.getpid()}
    try:
        from emukern.api import Machine, resolve_program
        from emukern.options import config_from_args
        ns = parse_point_args(point)
        cfg = config_from_args(ns)
        prog, src_arch = resolve_program(ns.program, ns.arch or None)
        elf = Path(prog).read_bytes()
        argv = [str(ns.program), *ns.args]
        key = point_key(elf, argv, cfg)
        rec["key"] = key
        cache = ResultCache(Path(cache_dir) if cache_dir else None)
        hit = cache.get(key)
        if hit is not None:
            rec.update(ok=True, cached=True, result=hit)
            return rec
        m = Machine(cfg)
        m.explicit_arch = ns.arch
        m.load(ns.program, ns.args)
        result = m.run().to_json()
        cache.put(key, result)
        rec.update(ok=True, result=result)
    except EmukernError as exc:
        rec["error"] = exc.message + (f" (hint: {exc.hint})" if exc.hint else "")
    except Exception as exc:  # noqa: BLE001 - one point's bug must not stop the sweep
        rec["error"] = f"internal error: {type(exc).__name__}: {exc}"
    return rec


@dataclass
class SweepRun:
    records: list[dict[str, Any]] = field(default_factory=list)
    interrupted: bool = False

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [r for r in self.records if not r["ok"]]


class LocalExecutor:
    """A process pool on this machine (default: one worker per core)."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or os.cpu_count() or 1
        self.description = f"local pool, {self.workers} worker(s)"

    def map(self, points: list[Point], cache_dir: str | None,
            on_done: Callable[[dict[str, Any]], None]) -> None:
        with ProcessPoolExecutor(max_workers=self.workers) as pool:
            pending: set[Future] = {pool.submit(run_point, p, cache_dir, i) for i, p in enumerate(points)}
            try:
                while pending:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for f in done:
                        on_done(f.result())
            except KeyboardInterrupt:
                for f in pending:
                    f.cancel()
                pool.shutdown(wait=False, cancel_futures=True)
                raise


class DaskExecutor:
    """A Dask distributed cluster: ``tcp://HOST:8786`` (or an existing Client)."""

    def __init__(self, scheduler: Any) -> None:
        try:
            from distributed import Client
        except ImportError:
            raise ConfigError("--scheduler needs Dask distributed",
                              hint="pip install 'emukern[sweep]' (or: pip install distributed)") from None
        if isinstance(scheduler, str):
            try:
                self.client = Client(scheduler, timeout="10s")
            except (OSError, TimeoutError) as exc:
                raise ConfigError(f"cannot reach the Dask scheduler at {scheduler}: {exc}",
                                  hint="start one with `dask scheduler` and workers with `dask worker ADDRESS`") from None
            self._own = True
        else:
            self.client, self._own = scheduler, False
        self.description = f"Dask cluster at {self.client.scheduler.address}"

    def map(self, points: list[Point], cache_dir: str | None,
            on_done: Callable[[dict[str, Any]], None]) -> None:
        from distributed import as_completed
        futures = [self.client.submit(run_point, p, cache_dir, i, pure=False) for i, p in enumerate(points)]
        try:
            for f in as_completed(futures):
                on_done(f.result())
        except KeyboardInterrupt:
            self.client.cancel(futures)
            raise
        finally:
            if self._own:
                self.client.close()


def run_sweep(points: Iterable[Point], executor: Any, cache_dir: str | None,
              on_done: Callable[[dict[str, Any]], None] | None = None) -> SweepRun:
    """Run every point; Ctrl-C stops the sweep and keeps the points already finished."""
    run = SweepRun()
    pts = list(points)

    def done(rec: dict[str, Any]) -> None:
        run.records.append(rec)
        if on_done is not None:
            on_done(rec)

    try:
        executor.map(pts, cache_dir, done)
    except KeyboardInterrupt:
        run.interrupted = True
    run.records.sort(key=lambda r: r["index"])
    return run
