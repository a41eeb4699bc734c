"""`emukern sweep`: run a grid of `emukern run` points on a process pool or a Dask cluster.

Every emukern run is deterministic, so a point's result is a pure function of its inputs: the
program's bytes, the resolved machine options, the cost table and emukern itself.  That makes
three things cheap that are expensive for other emulators:

* a **content-addressed cache** (:mod:`emukern.sweep.cache`): a point already run — by this sweep,
  another sweep, or another machine sharing the cache directory — costs nothing;
* **scale-out** (:mod:`emukern.sweep.runner`): points run on a local process pool (all cores) or on
  a Dask distributed cluster (``--scheduler tcp://HOST:8786``), and the answer cannot depend on
  which worker ran a point;
* **tidy results** (:mod:`emukern.sweep.results`): one row per point, every counter a column,
  as CSV and Parquet, with a plot per swept axis.

The spec is TOML (:mod:`emukern.sweep.spec`).
"""
from typing import Any

__all__ = ["Point", "SweepSpec", "load_spec"]


def __getattr__(name: str) -> Any:
    """The spec's names, imported when first used (`emukern --help` and `emukern run` build the
    sweep subcommand's parser without needing the TOML and dataclass machinery)."""
    if name in __all__:
        from emukern.sweep import spec
        return getattr(spec, name)
    raise AttributeError(f"module 'emukern.sweep' has no attribute {name!r}")


def check_sweep_extra(scheduler: bool = False) -> None:
    """Refuse a sweep, before its first point runs, when the ``[sweep]`` extra is not installed:
    its tables need pandas (and a --scheduler run Dask distributed).  Without this, every point
    would run and the results would then fail to be written."""
    import importlib.util

    from emukern.errors import ConfigError
    need = ["pandas"] + (["distributed"] if scheduler else [])
    missing = [m for m in need if importlib.util.find_spec(m) is None]
    if missing:
        raise ConfigError(f"emukern sweep needs {' and '.join(missing)}, which {'is' if len(missing) == 1 else 'are'} "
                          "not installed: pip install 'emukern[sweep]'",
                          hint="the [sweep] extra adds pandas, pyarrow and Dask distributed; "
                               "nothing was run")

