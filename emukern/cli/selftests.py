"""`emukern selftests`: Linux's own arm64/riscv selftests under every policy x vector length."""
from __future__ import annotations

import argparse
from typing import Any

from emukern.cli.only import only_help, parse_only
from emukern.options import machine_options, parse_int


def selftest_names() -> list[str]:
    """Every selftest's short name (sve-test, hwprobe ...), as --only takes them; a longer
    form (fp/sve-test, arm64/fp/sve-test) names the same test."""
    from emukern.selftests.catalog import GENERIC, TESTS
    out: list[str] = []
    for t in [*TESTS, *GENERIC]:
        if t.name not in out:
            out.append(t.name)
    return out


def _is_selftest(name: str) -> bool:
    from emukern.selftests.catalog import select
    return bool(select(None, [name], "all"))


def cmd_selftests(a: argparse.Namespace) -> int:
    if a.suite == "stress-ng":          # Debian's stress-ng, not Linux's selftests: its own module
        from emukern.selftests.stressng import main as stressng_main
        return stressng_main(a)
    a.only = parse_only(a.only, selftest_names(), "selftest", "selftests", known=_is_selftest)
    from emukern.selftests.suite import main as selftests_main
    return selftests_main(a)


def add_selftests_command(sub: Any) -> None:
    """`emukern selftests`: Linux's own arm64/riscv selftests, built from a real release, run under
    every relevant policy x vector length; kept in one function (emukern/selftests/ owns the rest)."""
    s = sub.add_parser("selftests", help="build and run Linux's own arm64/riscv selftests under every policy x VL",
                       description="Fetches linux-source-6.12 from Debian (cached under ~/.cache/emukern), "
                       "builds tools/testing/selftests/{arm64,riscv} with their Makefiles (static, Debian "
                       "cross compilers, the release's UAPI headers) and runs each test under every value of "
                       "the switches it exercises and every VL/VLEN, printing test x configuration -> the "
                       "test's own verdict, and for a failure the first cause emukern names. Exit status 1 "
                       "when any outcome differs from emukern/selftests/expected.toml.",
                       epilog="examples:\n"
                              "  emukern selftests --list                      # the tests and the switches each exercises\n"
                              "  emukern selftests                             # every test x policy x VL/VLEN (a few minutes)\n"
                              "  emukern selftests --only sve-test,vec-syscfg --vl 256\n"
                              "  emukern selftests --kernel before             # every switch as before its patch\n"
                              "  emukern selftests --real debian-13-arm64      # the same builds on a real kernel too",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("--only", action="append", default=[], metavar="NAMES",
                   help=only_help("test", selftest_names(),
                                  " (sve-test, fp/sve-test and arm64/fp/sve-test name the same test)"))
    s.add_argument("--suite", choices=("vector", "generic", "all", "stress-ng"), default="vector",
                   help="vector: the arm64/riscv vector, signal and ABI tests (the default, what CI runs); "
                        "generic: the architecture-independent selftests (futex, timers, clone3, exec, mm, "
                        "proc, ptrace, pidfd ...) on both arches; all: both; stress-ng: Debian's stress-ng "
                        "--verify, one run per stressor x arch (emukern/selftests/stressng.py)")
    s.add_argument("--qemu-user", action="store_true",
                   help="with --suite stress-ng: also run each stressor under qemu-user, -L the same root")
    s.add_argument("--kernel", metavar="NAME",
                   help="pin every switch to one kernel profile: before | after its patch, or model a "
                        "release (`emukern info kernels`); a real one (debian-13-arm64 ...) also runs on "
                        "qemu-system's CPU and fails any test its recorded real kernel passes")
    s.add_argument("--real", metavar="KERNEL",
                   help="also boot this real kernel (debian-12-arm64 | debian-13-arm64 | debian-13-riscv64) "
                        "under qemu-system once per --vl (default 256) with every built test, and compare "
                        "verdicts with emukern --kernel KERNEL (results cached under ~/.cache/emukern)")
    s.add_argument("--record", action="store_true",
                   help="with --real: write the real verdicts to emukern/selftests/real_kernel.json")
    s.add_argument("--real-file", metavar="FILE", help="the recorded real verdicts (default: real_kernel.json)")
    s.add_argument("--vl", action="append", type=parse_int, default=[], metavar="BITS",
                   help="run vector tests only at this SVE VL / RVV VLEN (repeatable; default every one)")
    s.add_argument("--time-limit", type=float, default=120.0, metavar="S", help="host seconds per run (default 120)")
    s.add_argument("--stress-seconds", type=float, default=0.001, metavar="S",
                   help="simulated seconds a stress test runs before its SIGTERM (default 0.001)")
    s.add_argument("--linux-src", metavar="DIR", help="use this kernel tree instead of Debian's linux-source")
    s.add_argument("--expected", metavar="FILE", help="expected-results table (default: the built-in expected.toml)")
    s.add_argument("--json", metavar="FILE", help="also write every outcome as JSON")
    s.add_argument("--list", action="store_true", help="list the tests and their switches, run nothing")
    s.add_argument("-v", "--verbose", action="store_true", help="print each build and run as it starts")
    machine_options(s, guest_stdin=False)
    s.set_defaults(func=cmd_selftests)
