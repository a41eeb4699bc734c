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
        # a helper of the same directory links what its test links (validate_cap: libcap-ng)
        ht = BY_ID.get(f"{t.arch}/{t.dir}/{h}") or SelfTest(t.arch, t.dir, h, kind="helper", generic=t.generic,
                                                           deb_libs=t.deb_libs)
        hb = b.build(ht)
        if not hb.ok and built.ok and h in ("rdvl-sve", "vstate_exec_nolibc", "fpsimd-test", "sve-test"):
            return Built(t, None, f"its helper {h} did not build: {hb.reason}")
    return built


class SuiteInterrupted(Exception):
    """Ctrl-C during a run of the suite: ``outcomes`` are the runs that finished before it."""

    def __init__(self, outcomes: list[Outcome]) -> None:
        super().__init__("interrupted")
        self.outcomes = outcomes


def count_runs(tests: list[SelfTest], pinned: dict[str, str], vls: tuple[int, ...] | None) -> int:
    """How many runs run_suite makes: the length of the progress bar."""
    return sum(len(matrix(t, pinned, vls)) for t in tests)


def run_suite(src: LinuxSource, tests: list[SelfTest], opts: RunOptions, pinned: dict[str, str],
              vls: tuple[int, ...] | None, expected: ExpectedTable,
              progress: Callable[[str], None] | None = None,
              advance: Callable[[str], None] | None = None) -> list[Outcome]:
    """Build and run each test under each configuration.  ``progress`` is told each step (-v);
    ``advance`` is called once per finished run (the progress bar).  Ctrl-C raises
    SuiteInterrupted carrying the runs that finished."""
    b = Builder(src)
    if any(t.generic for t in tests):
        from emukern.selftests.source import ensure_generic
        ensure_generic(src, progress)
    outcomes: list[Outcome] = []
    try:
        for t in tests:
            if progress:
                progress(f"build {t.id}")
            if advance:
                advance(f"build {t.id}")
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
                o.vl = cfg.vl
                judge(o, expected.lookup(t.id, cfg.policy_dict(), cfg.vl))
                outcomes.append(o)
                if advance:
                    advance("")
                if progress:
                    progress(f"  -> {o.verdict}{' (UNEXPECTED)' if o.unexpected else ''}"
                             f"{': ' + o.cause[:100] if o.cause else ''}")
    except KeyboardInterrupt:
        raise SuiteInterrupted(outcomes) from None
    return outcomes


class _Bar:
    """The progress bar reproduce and sweep show (rich, on stderr: the table stays on stdout),
    one step per run; when stderr is not a terminal (a CI log), one line per test instead;
    nothing when -v prints each step."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.progress: Any = None
        self.lines = enabled and total > 0 and not sys.stderr.isatty()
        self.total, self.done = total, 0
        if enabled and total and not self.lines:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
            self.progress = Progress(TextColumn("[progress.description]{task.description}"), BarColumn(),
                                     MofNCompleteColumn(), TimeElapsedColumn(),
                                     console=Console(stderr=True), transient=True)
            self.task = self.progress.add_task("selftests", total=total)

    def __enter__(self) -> "_Bar":
        if self.progress is not None:
            self.progress.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.progress is not None:
            self.progress.stop()

    def advance(self, what: str) -> None:
        if self.lines:
            if what:
                print(f"selftests: [{self.done}/{self.total} runs] {what}", file=sys.stderr, flush=True)
            else:
                self.done += 1
            return
        if self.progress is None:
            return
        if what:
            self.progress.update(self.task, description=f"selftests: {what}")
        else:
            self.progress.advance(self.task)


STYLE = {"pass": "green", "fail": "red", "skip": "yellow", "timeout": "magenta", "not built": "red"}


def _groups(outcomes: list[Outcome]) -> list[tuple[Outcome, list[Outcome]]]:
    """Consecutive runs of one test with the same verdict, counts, cause and expectation."""
    def key(x: Outcome) -> tuple[Any, ...]:
        return (x.test, x.verdict, x.counts, x.cause, x.detail, x.expected, x.expect_reason, x.unexpected,
                x.real, x.real_counts, x.real_regression)

    out: list[tuple[Outcome, list[Outcome]]] = []
    for o in outcomes:
        if out and out[-1][0].test == o.test and key(out[-1][0]) == key(o):
            out[-1][1].append(o)
        else:
            out.append((o, [o]))
    return out


def print_table(outcomes: list[Outcome], src: LinuxSource, file: Any = None, collapse: bool = True,
                title: str = "") -> None:
    from rich.console import Console
    from rich.table import Table
    console = Console(file=file or sys.stdout, width=220)
    title = title or f"Linux {src.version} selftests under emukern ({src.origin})"
    table = Table(title=title, show_lines=True)
    with_real = any(o.real for o in outcomes)
    cols = ["test", "configuration"] + (["real kernel", "real p/f/s"] if with_real else []) + [
        "verdict" if not with_real else "emukern", "p/f/s", "causes emukern names (first first)", "expected"]
    for col in cols:
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
        if o.real_regression:
            v += " [bold red](REAL KERNEL PASSES)[/]"
        elif o.real and o.real != o.verdict:
            v += " [yellow](differs from real)[/]"
        cause = o.cause + (f" — test says: {o.detail}" if o.detail and o.detail != o.cause else "")
        exp = o.expected + (f": {o.expect_reason}" if o.expect_reason else "")
        name = o.test.split("/", 1)[1] if "/" in o.test else o.test
        real = ([f"[{STYLE.get(o.real, 'white')}]{o.real}[/]" if o.real else "-", o.real_counts]
                if with_real else [])
        table.add_row(name, conf, *real, v, o.counts, cause, exp)
    console.print(table)
    by: dict[str, int] = {}
    for o in outcomes:
        by[o.verdict] = by.get(o.verdict, 0) + 1
    bad = sum(o.unexpected for o in outcomes)
    from emukern.selftests.catalog import BY_ID, NOT_RUN, NOT_RUN_GENERIC
    arches = {o.test.split("/", 1)[0] for o in outcomes}
    kinds = {("generic" if BY_ID[o.test].generic else "vector") for o in outcomes if o.test in BY_ID}
    for d, why in NOT_RUN.items():
        if d.split("/", 1)[0] in arches and "vector" in kinds:
            console.print(f"[dim]not in the matrix: {d} — {why}[/]")
    if "generic" in kinds:
        for d, why in NOT_RUN_GENERIC.items():
            console.print(f"[dim]not in the matrix: {d} — {why}[/]")
    console.print(f"{len(outcomes)} runs of {len(per_test)} tests: "
                  + ", ".join(f"{v} {c}" for v, c in sorted(by.items())) + f"; {bad} unexpected")
    if with_real:
        compared = [o for o in outcomes if o.real]
        agree = sum(o.real == o.verdict for o in compared)
        regress = sum(o.real_regression for o in outcomes)
        console.print(f"against the real kernel: {len(compared)} runs compared, {agree} same verdict, "
                      f"{len(compared) - agree} differ; {regress} pass on the real kernel but not under "
                      "emukern" + (" (the target is 0)" if regress else ""))


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


def _kernel_choice(a: Any) -> tuple[str | None, Any, bool]:
    """(--kernel name, its emukern.kernel.versions entry or None, whether a real kernel boots it)."""
    from emukern.errors import ConfigError
    from emukern.kernel.versions import KERNELS as VERSIONS
    from emukern.oracle.kernels import PROFILES
    real = getattr(a, "real", None)
    name = a.kernel
    if real:
        if real not in PROFILES:
            raise ConfigError(f"--real {real}: not a real kernel emukern can boot",
                              hint="one of: " + ", ".join(PROFILES))
        if name and name != real:
            raise ConfigError(f"--real {real} compares with emukern's --kernel {real}, not {name}",
                              hint="drop --kernel (--real sets it)")
        name = real
    if name is None or name in KERNELS:
        return name, None, False
    v = VERSIONS.get(name)
    if v is None:
        raise ConfigError(f"unknown kernel profile {name!r}",
                          hint="one of: " + ", ".join([*KERNELS, *VERSIONS]))
    if a.arch and a.arch != v.arch:
        raise ConfigError(f"--kernel {name} is an {v.arch} kernel, but --arch {a.arch} was given",
                          hint=f"drop --arch or pick a {a.arch} kernel")
    return name, v, name in PROFILES


def check_vls(vls: tuple[int, ...], arches: set[str]) -> None:
    """Every --vl must be a vector length each selected architecture's machine can have (the
    rules MachineConfig applies: an SVE VL a multiple of 128 in 128..2048, an RVV VLEN a power of
    two in RVV_VLENS), refused once before anything runs rather than failing every run."""
    from emukern.config import RVV_VLENS as MACHINE_VLENS, sve_vl_valid_bits
    from emukern.errors import ConfigError
    for vl in vls:
        if "arm64" in arches and not sve_vl_valid_bits(vl):
            raise ConfigError(f"--vl {vl} is not an SVE vector length, and arm64 tests are selected",
                              hint="an SVE VL is a multiple of 128 between 128 and 2048"
                                   + ("; or add --arch riscv64" if "riscv64" in arches else ""))
        if "riscv64" in arches and vl not in MACHINE_VLENS:
            raise ConfigError(f"--vl {vl} is not an RVV VLEN, and riscv64 tests are selected",
                              hint="VLEN is one of " + ", ".join(map(str, MACHINE_VLENS))
                                   + ("; or add --arch arm64" if "arm64" in arches else ""))


def _bar_wanted(a: Any) -> bool:
    """Progress without -v (which prints each step instead)."""
    return not a.verbose


def main(a: Any) -> int:
    from emukern.options import config_from_args
    from emukern.errors import ConfigError
    kernel, version, real_profile = _kernel_choice(a)
    arch = version.arch if version is not None else a.arch
    only = [n.strip() for item in a.only for n in item.split(",") if n.strip()]
    suite = getattr(a, "suite", "vector") or "vector"
    tests = select(arch, only or None, suite)
    if not tests:
        other = [s for s in ("vector", "generic") if s != suite and select(arch, only or None, s)]
        raise ConfigError(f"no selftest matches {a.only}" + (f" in --suite {suite}" if only else ""),
                          hint=(f"it is in --suite {other[0]}" if other and only else
                                "names look like fp/sve-test or sve-test; `emukern selftests --list` shows them"))
    if a.list:
        for t in tests:
            print(f"{t.id:48s} {t.kind:7s} switches: {','.join(t.switches) or '-'}"
                  f"{'  x VL' if t.vector else ''}{'  ' + t.note if t.note else ''}")
        return 0
    real_name = getattr(a, "real", None)
    if getattr(a, "record", False) and not real_name:
        raise ConfigError("--record writes the verdicts of a real kernel", hint="use it with --real KERNEL")
    pinned: dict[str, str] = {}
    if kernel in KERNELS:
        pinned.update(KERNELS[kernel])
    elif version is not None:
        pinned.update(version.policies)     # the four changes as that release has them
    from emukern.kernel.policies import parse_assignments
    if real_name:
        # a real kernel has one behaviour per change: a --policy it lacks is refused, as compare does
        from emukern.oracle.compare import check_policies
        from emukern.oracle.kernels import PROFILES
        check_policies(PROFILES[real_name], parse_assignments(a.policy, "policy"))
    pinned.update(parse_assignments(a.policy, "policy"))
    from emukern.kernel.policies import Policies
    Policies(pinned)                  # unknown names/values: a clear error before anything runs
    vls = tuple(a.vl) if a.vl else None
    if vls:
        check_vls(vls, {t.arch for t in tests})
    a.policy = []
    a.arch = None
    base = config_from_args(a)        # validates the run options once
    base.policies = {}
    if version is not None:
        base.kernel = kernel          # the ID-register tables, MRS path, FP syscall path of that release
    opts = RunOptions(time_limit=a.time_limit, stress_seconds=a.stress_seconds, base=base,
                      qemu_cpu=real_profile)
    expected = ExpectedTable.load(Path(a.expected) if a.expected else None)
    src = get_source(a.linux_src, progress=lambda s: print(f"selftests: {s}", file=sys.stderr))
    prog = (lambda s: print(f"selftests: {s}", file=sys.stderr, flush=True)) if a.verbose else None
    try:
        return _run_and_report(a, src, tests, opts, pinned, vls, expected, prog, kernel, arch, only,
                               real_profile)
    except SuiteInterrupted as stop:
        # Ctrl-C: the runs that finished are kept, as reproduce keeps its finished experiments
        if stop.outcomes:
            print_table(stop.outcomes, src, title=f"Linux {src.version} selftests under emukern: "
                        f"interrupted after {len(stop.outcomes)} runs")
        print(f"emukern: interrupted: {len(stop.outcomes)} runs finished (the table above); "
              "not checked against expected.toml, no --json written", file=sys.stderr)
        return 130


def _run_and_report(a: Any, src: LinuxSource, tests: list[SelfTest], opts: RunOptions,
                    pinned: dict[str, str], vls: tuple[int, ...] | None, expected: ExpectedTable,
                    prog: Callable[[str], None] | None, kernel: Any, arch: Any, only: list[str],
                    real_profile: Any) -> int:
    title = ""
    real_runs: list[Any] = []
    real_name = getattr(a, "real", None)        # --real KERNEL: boot it too and compare verdicts
    if real_profile:
        from emukern.selftests.real import RealTable, mark, run_real
        table = RealTable.load(Path(a.real_file) if getattr(a, "real_file", None) else None)
        if vls is None:
            rec = table.kernel(kernel or "")
            vls = tuple(int(v) for v in rec.get("vls", {})) if rec and not real_name else ()
            vls = vls or (256,)
        outcomes = []
        with _Bar(sum(count_runs(tests, pinned, (vl,)) for vl in vls), _bar_wanted(a)) as bar:
            for vl in vls:
                # one VL at a time: every test (vector or not) runs on the CPU of that boot
                try:
                    outcomes += run_suite(src, tests, opts, pinned, (vl,), expected, progress=prog,
                                          advance=bar.advance)
                except SuiteInterrupted as stop:
                    raise SuiteInterrupted(outcomes + stop.outcomes) from None
        order = {t.id: n for n, t in enumerate(tests)}
        outcomes.sort(key=lambda o: order[o.test])      # stable: each test's VLs together, in order
        if real_name:
            b = Builder(src)
            built = [(t, build_with_helpers(b, t)) for t in tests]
            say = lambda s: print(f"selftests: {s}", file=sys.stderr, flush=True)   # noqa: E731
            for vl in vls:
                rr = run_real(real_name, built, vl, a.time_limit, progress=say)
                say(f"{rr.kernel} at {'VL' if arch == 'arm64' else 'VLEN'} {vl}: "
                    + (f"1 boot, {rr.boot_seconds:.1f} s" if rr.boots else "every result from the cache"))
                real_runs.append(rr)
                if getattr(a, "record", False):
                    table.record(rr, f"emukern selftests --real {real_name} --vl {vl} --record"
                                 + "".join(f" --only {n}" for n in only))
            if getattr(a, "record", False):
                table.save(Path(a.real_file) if getattr(a, "real_file", None) else None)
            live = {(rr.vl, tid): ro.to_json() for rr in real_runs for tid, ro in rr.outcomes.items()}
            for o in outcomes:
                mark(o, live.get((o.vl, o.test)))
            r0 = real_runs[0]
            title = (f"Linux {src.version} selftests: Linux {r0.release} ({r0.package} {r0.version}, "
                     f"qemu-system -cpu {', '.join(r.cpu for r in real_runs)}) vs emukern --kernel {kernel}")
        else:
            for o in outcomes:
                mark(o, table.lookup(kernel or "", o.vl, o.test))
            rec = table.kernel(kernel or "")
            if rec:
                title = (f"Linux {src.version} selftests under emukern --kernel {kernel}, beside Linux "
                         f"{rec.get('release')} ({rec.get('package')} {rec.get('version')}) as recorded "
                         f"on {rec.get('date')}")
    else:
        with _Bar(count_runs(tests, pinned, vls), _bar_wanted(a)) as bar:
            outcomes = run_suite(src, tests, opts, pinned, vls, expected, progress=prog, advance=bar.advance)
    print_table(outcomes, src, title=title)
    if a.json:
        doc: dict[str, Any] = {"linux": src.version, "source": src.origin, "kernel": kernel,
                               "runs": [o.to_json() for o in outcomes]}
        if real_runs:
            doc["real"] = [{"kernel": r.kernel, "package": r.package, "version": r.version, "release": r.release,
                            "cpu": r.cpu, "vl": r.vl, "date": r.date,
                            "tests": {k: v.to_json() for k, v in r.outcomes.items()}} for r in real_runs]
        for r in doc["runs"]:
            r.pop("wall_seconds")          # host time: keep the file the same for the same inputs
        Path(a.json).write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return 1 if any(o.unexpected or o.real_regression for o in outcomes) else 0
