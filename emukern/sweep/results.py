"""Sweep results a researcher can use: one tidy row per point, CSV + Parquet, a plot per axis."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

SCALARS = ("exit_status", "stop_reason", "user_insns", "kernel_cycles", "cycles", "sim_seconds")
# bump when plot_axis draws differently: the PNGs a cached sweep kept are drawn again
PLOT_STYLE = 1
PLOT_METRICS = (("cycles", "elapsed simulated cycles"), ("kernel_cycles", "kernel cycles"),
                ("user_insns", "user instructions"))


def _text(v: Any) -> str:
    return ",".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)


def compact_axis(axis: str, values: list[Any]) -> tuple[str, Any]:
    """(column header, value formatter) for a swept axis.  Assignment axes whose values all set
    the same key (``riscv-discard=eager``, ``riscv-discard=deferred``) show the key once in the
    header and only the value in each cell, so tables stay narrow without cutting anything."""
    texts = [_text(v) for v in values]
    keys = {t.split("=", 1)[0] for t in texts if "=" in t}
    if len(keys) == 1 and all("=" in t for t in texts):
        key = keys.pop()
        return f"{key}", lambda v: _text(v).split("=", 1)[1]
    return axis, _text


def flatten(rec: dict[str, Any]) -> dict[str, Any]:
    """One row: the point's axes, its status, and every counter of its result as a column."""
    row: dict[str, Any] = {"index": rec["index"], "point": rec["label"], "program": Path(rec["program"]).name}
    for k, v in rec["axes"].items():
        row[k] = ",".join(map(str, v)) if isinstance(v, list) else v
    row["ok"] = rec["ok"]
    row["cached"] = rec.get("cached", False)
    row["error"] = rec.get("error") or ""
    res = rec.get("result") or {}
    for k in SCALARS:
        row[k] = res.get(k)
    for group in ("traps", "syscalls"):
        for k, v in sorted((res.get(group) or {}).items()):
            row[f"{group}.{k}"] = v
    for k, v in sorted((res.get("unknown_syscalls") or {}).items()):
        row[f"unknown_syscalls.{k}"] = v
    cpus = res.get("cpus") or []
    for k in ("switches", "ticks", "idle_cycles"):
        if cpus:
            row[f"cpus.{k}"] = sum(c.get(k, 0) for c in cpus)
    for k, v in sorted((res.get("extra") or {}).items()):
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            row[f"extra.{k}"] = v
    return row


def table(records: list[dict[str, Any]]) -> Any:
    import pandas as pd
    df = pd.DataFrame([flatten(r) for r in records])
    counters = [c for c in df.columns if c.startswith(("traps.", "syscalls.", "unknown_syscalls."))]
    if counters:
        df[counters] = df[counters].fillna(0).astype("int64")   # a counter absent from a run is 0
    return df


def write_results(records: list[dict[str, Any]], axes: list[str], out: Path, *, partial: bool,
                  plots: bool = True) -> dict[str, Path]:
    """points/*.json, results.csv, results.parquet and (``plots``) one PNG per swept axis, under
    ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    pdir = out / "points"
    pdir.mkdir(exist_ok=True)
    for r in records:
        (pdir / f"{r['index']:05d}.json").write_text(json.dumps(r, indent=1, sort_keys=True) + "\n")
    files: dict[str, Path] = {}
    if not records:
        return files
    df = table(records)
    files["csv"] = out / "results.csv"
    df.to_csv(files["csv"], index=False)
    try:
        files["parquet"] = out / "results.parquet"
        df.to_parquet(files["parquet"], index=False)
    except ImportError:                 # pyarrow/fastparquet missing: CSV still written
        files.pop("parquet")
    (out / "sweep.json").write_text(json.dumps({"points": len(records), "partial": partial,
                                                "failed": int((~df["ok"]).sum()), "axes": axes},
                                               indent=1) + "\n")
    for axis in axes if plots else ():
        png = plot_axis(df, axis, axes, out)
        if png is not None:
            files[f"plot:{axis}"] = png
    return files


# axes whose values have a unit, for the x label
AXIS_UNITS = {"vlen": "bits", "dlen": "bits", "sve_vl": "bits", "hz": "ticks per simulated second",
              "freq_hz": "cycles per simulated second", "cpus": "CPUs"}
# a panel whose series span more than this ratio gets a log axis: on a linear one the small
# series would lie flat on the bottom
LOG_RATIO = 20.0


def _y_scale(values: list[float]) -> str:
    """"linear", "log" or "symlog" (zeros among values that span orders of magnitude)."""
    pos = [v for v in values if v > 0]
    if len(pos) < 2 or max(pos) / min(pos) < LOG_RATIO:
        return "linear"
    return "symlog" if len(pos) < len(values) else "log"


def plot_axis(df: Any, axis: str, axes: list[str], out: Path) -> Path | None:
    """Each metric against one swept axis; one line per combination of the other axes.

    The legend sits below the panels (never on the data); a panel whose series differ by more
    than :data:`LOG_RATIO` times is drawn on a log axis, so every series keeps its shape."""
    ok = df[df["ok"]]
    if axis not in ok or ok[axis].nunique() < 2:
        return None
    path = out / f"plot_{axis.replace('/', '_')}.png"
    # a sweep answered from its cache plots the same data again: keep the PNG drawn from it
    # (drawing is most of a cached sweep's time); the key covers the data and this code
    stamp = out / f".{path.name}.key"
    cols = [c for c in [axis, *axes, *(m for m, _ in PLOT_METRICS)] if c in ok]
    data_key = hashlib.sha256(repr((PLOT_STYLE, axis, axes, cols, ok[cols].to_csv(index=False))).encode()).hexdigest()
    if path.exists() and stamp.exists() and stamp.read_text() == data_key:
        return path
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    others = [a for a in axes if a != axis and a in ok and ok[a].nunique() > 1]
    numeric = ok[axis].map(lambda v: isinstance(v, (int, float))).all()
    xs_all = sorted(ok[axis].unique()) if numeric else list(dict.fromkeys(ok[axis]))
    groups = ok.groupby(others, sort=True) if others else [((), ok)]
    groups = list(groups)
    fmt = {a: compact_axis(a, list(ok[a].unique())) for a in others}
    ncol = 1 if len(groups) > 12 else 2 if len(groups) > 3 else len(groups) or 1
    legend_rows = -(-len(groups) // ncol) if others else 0
    height = 4 + 0.22 * legend_rows
    fig, panels = plt.subplots(1, len(PLOT_METRICS), figsize=(5 * len(PLOT_METRICS), height), squeeze=False)
    x_header, x_fmt = compact_axis(axis, xs_all)
    unit = AXIS_UNITS.get(axis)
    handles: list[Any] = []
    labels: list[str] = []
    for ax, (metric, title) in zip(panels[0], PLOT_METRICS):
        plotted: list[float] = []
        for n, (key, g) in enumerate(groups):
            g = g.groupby(axis)[metric].median()
            xs = [x for x in xs_all if x in g.index]
            pos = xs if numeric else [xs_all.index(x) for x in xs]
            ys = [float(g[x]) for x in xs]
            plotted += ys
            label = ", ".join(f"{fmt[a][0]}={fmt[a][1](v)}"
                              for a, v in zip(others, key if isinstance(key, tuple) else (key,))) or metric
            # earlier series get bigger markers, so series with equal values stay visible
            line, = ax.plot(pos, ys, marker="o", markersize=4 + 3 * (len(groups) - 1 - n), alpha=0.8, label=label)
            if ax is panels[0][0]:
                handles.append(line)
                labels.append(label)
        if not numeric:
            ax.set_xticks(range(len(xs_all)), [x_fmt(x) for x in xs_all], rotation=20, ha="right", fontsize=8)
        elif axis in ("vlen", "dlen", "sve_vl"):
            ax.set_xscale("log", base=2)        # 128, 256, 512 ... evenly spaced
            ax.set_xticks(xs_all, [str(x) for x in xs_all])
        ax.set_xlabel(f"{x_header} ({unit})" if unit else x_header)
        scale = _y_scale(plotted)
        if scale == "symlog":
            ax.set_yscale("symlog", linthresh=min(v for v in plotted if v > 0))
        elif scale == "log":
            ax.set_yscale("log")
        what = "simulated cycles" if "cycles" in metric else "instructions"
        ax.set_ylabel(f"{what}{' (log scale)' if scale != 'linear' else ''}")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    bottom = 0.0
    if others:
        fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=8, frameon=False,
                   title="one line per combination of the other swept axes", title_fontsize=8)
        bottom = min(0.45, (0.35 + 0.22 * legend_rows) / height)
    fig.suptitle(f"sweep: counters against {x_header}")
    fig.tight_layout(rect=(0, bottom, 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)
    stamp.write_text(data_key)
    return path
