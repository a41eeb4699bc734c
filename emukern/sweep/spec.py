"""Sweep specs: a TOML file naming programs, fixed run options and the axes to sweep.

    [sweep]
    name = "discard-knob"
    programs = ["guest_asm/riscv/syscall_loop.S"]   # relative to this file
    args = ["2000"]                                   # guest argv[1:] (optional)

    [options]                  # the same options as `emukern run`, without the leading --
    cpus = 1

    [grid]                     # every combination of these values is one point
    vlen = [128, 256, 512]
    policy = ["riscv-discard=eager", "riscv-discard=deferred"]
    sysctl = ["abi.riscv_v_vstate_discard=0", "abi.riscv_v_vstate_discard=1"]

    [[points]]                 # or/and: explicit points (merged with [options])
    vlen = 1024

A repeatable option (``policy``, ``sysctl``, ``cost``, ``cpu-id``) takes a string or a list of
strings; a flag (``idst``, ``no-v``) takes true/false.  Each point is turned into the argument list
`emukern run` would get and parsed by the same parser, so a point means exactly what the same
command line means.
"""
from __future__ import annotations

import argparse
import itertools
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emukern.errors import ConfigError

REPEATABLE = {"policy", "sysctl", "cost", "cpu-id"}
FLAGS = {"idst", "no-v", "vstate-discard-default"}
NOT_POINT_OPTIONS = {"json", "trace", "quiet", "q"}


@dataclass(frozen=True)
class Point:
    """One run: a program, its guest arguments and `emukern run` options (name -> value)."""

    program: str
    args: tuple[str, ...] = ()
    options: tuple[tuple[str, Any], ...] = ()
    axes: tuple[tuple[str, Any], ...] = ()     # the swept values that define this point

    def argv(self) -> list[str]:
        """The `emukern run` option list for this point (program and guest args excluded)."""
        out: list[str] = []
        for name, value in self.options:
            flag = "--" + name
            if name in FLAGS:
                if value:
                    out.append(flag)
            elif name in REPEATABLE:
                for v in ([value] if isinstance(value, str) else list(value)):
                    out += [flag, str(v)]
            else:
                out += [flag, str(value)]
        return out

    def label(self) -> str:
        axes = ", ".join(f"{k}={_show(v)}" for k, v in self.axes)
        return f"{Path(self.program).name}" + (f" [{axes}]" if axes else "")


def _show(v: Any) -> str:
    return ",".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)


def _freeze(v: Any) -> Any:
    return tuple(_freeze(x) for x in v) if isinstance(v, list) else v


@dataclass
class SweepSpec:
    name: str
    points: list[Point]
    axes: list[str] = field(default_factory=list)
    source: Path | None = None


def _check_option(name: str, where: str) -> None:
    from emukern.sweep.runner import run_parser
    known = {a.dest.replace("_", "-") for a in run_parser()._actions if a.option_strings}
    if name in NOT_POINT_OPTIONS or name not in known:
        raise ConfigError(f"{where}: {name!r} is not an `emukern run` option",
                          hint="use the option's long name without the leading --, e.g. vlen = 512")


def build_spec(data: dict[str, Any], base: Path, name: str = "sweep") -> SweepSpec:
    """A :class:`SweepSpec` from parsed TOML (``base`` resolves relative program paths)."""
    head = data.get("sweep", {})
    unknown = set(data) - {"sweep", "options", "grid", "points"}
    if unknown:
        raise ConfigError(f"unknown table(s) in the sweep spec: {', '.join(sorted(unknown))}",
                          hint="a spec has [sweep], [options], [grid] and [[points]]")
    programs = head.get("programs") or ([head["program"]] if "program" in head else [])
    if not programs or not all(isinstance(p, str) for p in programs):
        raise ConfigError("the sweep spec names no programs",
                          hint='add programs = ["guest_asm/riscv/hello.S"] under [sweep]')
    args = head.get("args", [])
    if not isinstance(args, list):
        raise ConfigError("[sweep] args must be a list of strings")
    fixed = dict(data.get("options", {}))
    grid = dict(data.get("grid", {}))
    for k in fixed:
        _check_option(k, "[options]")
    for k, vals in grid.items():
        _check_option(k, "[grid]")
        if not isinstance(vals, list) or not vals:
            raise ConfigError(f"[grid] {k} must be a non-empty list of values")
    extra = data.get("points", [])
    for i, pt in enumerate(extra):
        for k in pt:
            _check_option(k, f"[[points]] #{i + 1}")
    resolved = []
    for prog in programs:
        p = Path(prog)
        if not p.is_absolute():
            p = (base / p) if (base / p).exists() else p
        resolved.append(str(p))
    axes = list(grid)
    multi = len(resolved) > 1
    points: list[Point] = []
    combos = list(itertools.product(*(grid[k] for k in axes))) if axes else ([()] if not extra else [])
    for prog in resolved:
        for combo in combos:
            opts = {**fixed, **dict(zip(axes, combo))}
            ax = tuple((k, _freeze(v)) for k, v in zip(axes, combo))
            if multi:
                ax = (("program", Path(prog).name),) + ax
            points.append(Point(prog, tuple(map(str, args)), tuple((k, _freeze(v)) for k, v in opts.items()), ax))
        for pt in extra:
            opts = {**fixed, **pt}
            ax = tuple((k, _freeze(v)) for k, v in pt.items())
            if multi:
                ax = (("program", Path(prog).name),) + ax
            points.append(Point(prog, tuple(map(str, args)), tuple((k, _freeze(v)) for k, v in opts.items()), ax))
    axis_names = (["program"] if multi else []) + axes + [k for pt in extra for k in pt if k not in axes]
    return SweepSpec(name=str(head.get("name", name)), points=points,
                     axes=list(dict.fromkeys(axis_names)))


def load_spec(path: str | Path) -> SweepSpec:
    """Read a TOML sweep spec; errors name the file and what to fix."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text())
    except FileNotFoundError:
        raise ConfigError(f"no such sweep spec: {p}", hint="write a TOML file; see `emukern sweep --help`") from None
    except IsADirectoryError:
        raise ConfigError(f"{p} is a directory, not a sweep spec") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{p} is not valid TOML: {exc}") from None
    spec = build_spec(data, p.parent, name=p.stem)
    spec.source = p
    return spec


def parse_point_args(point: Point) -> argparse.Namespace:
    """The namespace `emukern run` would build for this point."""
    from emukern.sweep.runner import run_parser
    try:
        # options first, then `--`: guest arguments that look like options stay the guest's
        return run_parser().parse_args([*point.argv(), "--", point.program, *point.args])
    except SystemExit:
        raise ConfigError(f"point {point.label()}: invalid options {' '.join(point.argv())}") from None
