"""`emukern selftests`: fetch, build, run the matrix, print the table, write JSON."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Callable

from emukern.selftests.build import Builder, Built
from emukern.selftests.catalog import BY_ID, SelfTest, select
from emukern.selftests.expected import ExpectedTable, judge
from emukern.selftests.runner import (KERNELS, Config, Outcome, RunOptions, load_syscall_names, matrix,
                                      run_one)
from emukern.selftests.source import LinuxSource, get_source


def build_with_helpers(b: Builder, t: SelfTest) -> Built:
    """Build ``t`` and the programs it execs from its directory (fp-stress's children, ...)."""
    if t.kind == "bench" and t.name == "fp-pidbench":
        built = b.pidbench()
    else:
        built = b.build(t)
    for h in t.helpers:
        ht = BY_ID.get(f"{t.arch}/{t.dir}/{h}") or SelfTest(t.arch, t.dir, h, kind="helper")
        hb = b.build(ht)
        if not hb.ok and built.ok and h in ("rdvl-sve", "vstate_exec_nolibc", "fpsimd-test", "sve-test"):
            return Built(t, None, f"its helper {h} did not build: {hb.reason}")
    return built


def run_suite(src: LinuxSource, tests: list[SelfTest], opts: RunOptions, pinned: dict[str, str],
              vls: tuple[int, ...] | None, expected: ExpectedTable,
              progress: Callable[[str], None] | None = None) -> list[Outcome]:
    b = Builder(src)
    outcomes: list[Outcome] = []
    for t in tests:
        if progress:
            progress(f"build {t.id}")
        built = build_with_helpers(b, t)
        if built.ok:
            try:
                load_syscall_names(t.arch, b.headers(t.arch))
            except Exception:       # names are a nicety; the numbers still print
                pass
        for cfg in matrix(t, pinned, vls):
            if progress:
                progress(f"run {t.id} [{cfg.label(t.arch)}]")
            o = run_one(t, built, cfg, opts)
            judge(o, expected.lookup(t.id, cfg.policy_dict(), cfg.vl))
            outcomes.append(o)
            if progress:
                progress(f"  -> {o.verdict}{' (UNEXPECTED)' if o.unexpected else ''}"
                         f"{': ' + o.cause[:100] if o.cause else ''}")
    return outcomes


STYLE = {"pass": "green", "fail": "red", "skip": "yellow", "timeout": "magenta", "not built": "red"}


def _groups(outcomes: list[Outcome]) -> list[tuple[Outcome, list[Outcome]]]:
    """Consecutive runs of one test with the same verdict, counts, cause and expectation."""
    out: list[tuple[Outcome, list[Outcome]]] = []
    for o in outcomes:
        key = (o.test, o.verdict, o.counts, o.cause, o.detail, o.expected, o.expect_reason, o.unexpected)
        if out and out[-1][0].test == o.test and (out[-1][0].test, out[-1][0].verdict, out[-1][0].counts,
                                                  out[-1][0].cause, out[-1][0].detail, out[-1][0].expected,
                                                  out[-1][0].expect_reason, out[-1][0].unexpected) == key:
            out[-1][1].append(o)
        else:
            out.append((o, [o]))
    return out


def print_table(outcomes: list[Outcome], src: LinuxSource, file: Any = None, collapse: bool = True) -> None:
    from rich.console import Console
    from rich.table import Table
    console = Console(file=file or sys.stdout, width=220)
    table = Table(title=f"Linux {src.version} selftests under emukern ({src.origin})", show_lines=True)
    for col in ("test", "configuration", "verdict", "p/f/s", "causes emukern names (first first)", "expected"):
        table.add_column(col, overflow="fold")
    per_test: dict[str, int] = {}
    for o in outcomes:
        per_test[o.test] = per_test.get(o.test, 0) + 1
    for o, grp in (_groups(outcomes) if collapse else [(o, [o]) for o in outcomes]):
        if len(grp) == 1:
            conf = o.config
        elif len(grp) == per_test[o.test]:
            conf = f"all {len(grp)}: " + _span([g.config for g in grp])
        else:
            conf = "\n".join(g.config for g in grp)
        v = f"[{STYLE.get(o.verdict, 'white')}]{o.verdict}[/]"
        if o.unexpected:
            v += " [bold red](UNEXPECTED)[/]"
        cause = o.cause + (f" — test says: {o.detail}" if o.detail and o.detail != o.cause else "")
        exp = o.expected + (f": {o.expect_reason}" if o.expect_reason else "")
        table.add_row(o.test.split("/", 1)[1] if "/" in o.test else o.test, conf, v, o.counts, cause, exp)
    console.print(table)
    by: dict[str, int] = {}
    for o in outcomes:
        by[o.verdict] = by.get(o.verdict, 0) + 1
    bad = sum(o.unexpected for o in outcomes)
    from emukern.selftests.catalog import NOT_RUN
    arches = {o.test.split("/", 1)[0] for o in outcomes}
    for d, why in NOT_RUN.items():
        if d.split("/", 1)[0] in arches:
            console.print(f"[dim]not in the matrix: {d} — {why}[/]")
    console.print(f"{len(outcomes)} runs of {len(per_test)} tests: "
                  + ", ".join(f"{v} {c}" for v, c in sorted(by.items())) + f"; {bad} unexpected")


def _span(labels: list[str]) -> str:
    """'a=x vl=128', 'a=y vl=256', ... -> 'a={x,y} x vl={128,256}'."""
    axes: dict[str, list[str]] = {}
    for lab in labels:
        for part in lab.split():
            k, _, v = part.partition("=")
            vals = axes.setdefault(k, [])
            if v not in vals:
                vals.append(v)
    return " x ".join(f"{k}={{{','.join(v)}}}" if len(v) > 1 else f"{k}={v[0]}" for k, v in axes.items())


def main(a: Any) -> int:
    from emukern.cli import config_from_args
    from emukern.errors import ConfigError
    arch = a.arch
    only = [n.strip() for item in a.only for n in item.split(",") if n.strip()]
    tests = select(arch, only or None)
    if not tests:
        raise ConfigError(f"no selftest matches {a.only}", hint="names look like fp/sve-test or sve-test; "
                          "`emukern selftests --list` shows them")
    if a.list:
        for t in tests:
            print(f"{t.id:48s} {t.kind:7s} switches: {','.join(t.switches) or '-'}"
                  f"{'  x VL' if t.vector else ''}{'  ' + t.note if t.note else ''}")
        return 0
    pinned: dict[str, str] = {}
    if a.kernel:
        if a.kernel not in KERNELS:
            raise ConfigError(f"unknown kernel profile {a.kernel!r}", hint="one of: " + ", ".join(KERNELS))
        pinned.update(KERNELS[a.kernel])
    from emukern.kernel.policies import parse_assignments
    pinned.update(parse_assignments(a.policy, "policy"))
    from emukern.kernel.policies import Policies
    Policies(pinned)                  # unknown names/values: a clear error before anything runs
    vls = tuple(a.vl) if a.vl else None
    a.policy = []
    a.arch = None
    base = config_from_args(a)        # validates the run options once
    base.policies = {}
    opts = RunOptions(time_limit=a.time_limit, stress_seconds=a.stress_seconds, base=base)
    expected = ExpectedTable.load(Path(a.expected) if a.expected else None)
    src = get_source(a.linux_src, progress=lambda s: print(f"selftests: {s}", file=sys.stderr))
    prog = (lambda s: print(f"selftests: {s}", file=sys.stderr, flush=True)) if a.verbose else None
    outcomes = run_suite(src, tests, opts, pinned, vls, expected, progress=prog)
    print_table(outcomes, src)
    if a.json:
        doc = {"linux": src.version, "source": src.origin, "runs": [o.to_json() for o in outcomes]}
        for r in doc["runs"]:
            r.pop("wall_seconds")          # host time: keep the file the same for the same inputs
        Path(a.json).write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return 1 if any(o.unexpected for o in outcomes) else 0
