"""`emukern reproduce` and `emukern bench`: the experiments and the emulator self-benchmark."""
from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from emukern.cli.only import only_help, parse_only
from emukern.options import parse_int

# the names --only takes (kept here so --help needs no import of the benchmarks;
# tests/cli/test_only.py checks them against emukern.bench.reproduce.EXPERIMENTS and
# emukern.bench.selfbench.MEASUREMENTS)
EXPERIMENT_NAMES = ("selfbench", "kernel_core", "rvv_unit", "riscv_vector", "arm64_mrs", "arm64_sve",
                    "riscv_kmv", "arm64_sve_upstream", "policy_study")
MEASUREMENT_NAMES = ("mips", "syscall", "signal", "pidbench", "rvv", "vsetvli", "mrs-sweep", "switch", "programs",
                     "pywork", "startup")


def _positive_int(text: str) -> int:
    """argparse type: an integer >= 1, with a message that says so."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number (give 1 or more)") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n} is less than 1 (give 1 or more)")
    return n


def cmd_reproduce(a: argparse.Namespace) -> int:
    only = parse_only(a.only, EXPERIMENT_NAMES, "experiment", "reproduce")
    from emukern.bench.reproduce import reproduce
    return reproduce(out_dir=Path(a.out), quick=a.quick, only=only, full=getattr(a, "full", False),
                     jobs=a.jobs, host_speed=not a.no_host_speed)


def cmd_bench(a: argparse.Namespace) -> int:
    only = parse_only(a.only, MEASUREMENT_NAMES, "measurement", "bench")
    from emukern.bench.selfbench import main as bench_main
    return bench_main(quick=a.quick, reps=a.reps, only=only or None, profile=a.profile, json_path=a.json)


def add_reproduce_command(sub: Any) -> None:
    rp = sub.add_parser("reproduce", help="run every experiment and print our figures beside the published ones",
                        description="Runs the experiment of each modelled Linux change, then the emulator's "
                        "host-speed self-benchmark, prints tables, writes PNG plots and results.json into --out "
                        "(--quick runs into OUT/quick; results.json is merged per experiment and says "
                        "which runs were quick, partial, failed or interrupted).")
    rp.add_argument("--out", default="reproduce-out", help="directory for plots and results (default reproduce-out)")
    rp.add_argument("--quick", action="store_true", help="smaller iteration counts (for smoke tests), written to OUT/quick")
    rp.add_argument("--only", action="append", default=[], metavar="NAMES",
                    help=only_help("experiment", EXPERIMENT_NAMES))
    rp.add_argument("--no-host-speed", action="store_true",
                    help="leave out the emulator's host-speed benchmarks (selfbench, rvv_unit; about 35 s), "
                    "which otherwise run after the four changes' figures: they measure this host, not a "
                    "Linux change, and a MISSED there is not a failed reproduction")
    rp.add_argument("--full", action="store_true",
                    help="real iteration counts: the upstream fp-pidbench's 2,560,000 getpid calls per loop, the policy "
                    "study's whole inputs (slow)")
    rp.add_argument("--jobs", type=_positive_int, default=os.cpu_count() or 1, metavar="N",
                    help="run the independent experiments in N worker processes (default: one per CPU, "
                    f"{os.cpu_count() or 1} here); the host-speed benchmarks always run alone, after the others; "
                    "--jobs 1 runs everything in this process, in order")
    rp.epilog = ("Downloads: the first run fetches Debian packages (linux-source for the upstream "
                 "fp-pidbench, about 150 MB) into ~/.cache/emukern, with a progress bar; later runs use the cache.")
    rp.set_defaults(func=cmd_reproduce)


def add_bench_command(sub: Any) -> None:
    b = sub.add_parser("bench", help="emulator self-benchmark: speed vs raw Unicorn, qemu-user (and Qiling)",
                       description="Runs emukern and its baselines (raw Unicorn, qemu-user, Qiling when installed) "
                       "alternately on the same guest loops, REPS rounds each, and prints min/median/max and "
                       "the median of the pairwise ratios; each speed target is marked met or MISSED (e.g. exact counting at >= "
                       "0.6x raw Unicorn's MIPS, a null syscall <= 1.5x a raw in-hook round trip, a pipe round trip "
                       "between threads <= 40 µs). Example: emukern bench --only switch,syscall --reps 3 --json out.json")
    b.add_argument("--quick", action="store_true", help="small iteration counts (smoke test)")
    b.add_argument("--reps", type=parse_int, default=None, metavar="N", help="rounds per figure (default 5)")
    b.add_argument("--only", action="append", default=[], metavar="NAMES",
                   help=only_help("measurement", MEASUREMENT_NAMES))
    b.add_argument("--profile", action="store_true",
                   help="also cProfile the null-syscall path on both arches: top entries printed and in the JSON")
    b.add_argument("--json", metavar="FILE", help="write every figure (samples, medians, ratios, targets) as JSON")
    b.set_defaults(func=cmd_bench)
