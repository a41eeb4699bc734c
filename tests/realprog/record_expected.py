"""Record what Debian 13's real kernels print for the probes of probes.py (one boot per kernel,
under qemu-system, through emukern.oracle's real_kernel machinery: minutes per boot).

    PYTHONPATH=. python tests/realprog/record_expected.py [--kernel debian-13-arm64] [PROBE ...]

writes tests/realprog/expected/<kernel>/<probe>.expected: the probe's stdout, then a last line
``exit <status>``.  The Debian programs of probes.DEBIAN run in a boot of their own whose
initramfs holds the realprog guest root; their files keep stdout, then stderr, then the status.  A probe whose run timed out or printed on stderr is reported and not written.
A new probe (for example an rseq, PAC or sched_yield probe once those land) is recorded by adding
it to probes.PROBES and naming it here."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))                 # tests/: cguests.py
sys.path.insert(0, str(HERE))                        # first: this directory's conftest.py

from cguests import build_cguest  # noqa: E402
from probes import DEBIAN, KERNELS, PROBES, expected_path  # noqa: E402

from emukern.oracle.initramfs import Program  # noqa: E402
from emukern.oracle.kernels import fetch_kernel, profile  # noqa: E402
from emukern.oracle.qemu import boot  # noqa: E402
from emukern.oracle.session import RealKernel  # noqa: E402


def record(kernel: str, names: list[str]) -> int:
    arch = KERNELS[kernel]
    chosen = [(n, src, a) for n, src, a in PROBES if not names or n in names]
    progs = [(build_cguest(src, arch), list(a)) for _, src, a in chosen]
    ans = RealKernel(disk_cache=True).run_many(progs, kernel=kernel, timeout=120)
    print(f"{kernel}: Linux {ans.release}, boot {ans.seconds:.0f} s{' (cached)' if ans.cached else ''}")
    bad = 0
    for (name, _, _), run in zip(chosen, ans.runs):
        if run.timed_out or run.stderr or run.errors:
            print(f"  {name}: NOT written (timed out {run.timed_out}, stderr {run.stderr[-300:]!r}, "
                  f"errors {run.errors})")
            bad += 1
            continue
        out = expected_path(kernel, name)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(run.stdout + f"exit {run.exit_status}\n".encode())
        print(f"  {name}: exit {run.exit_status}, {len(run.stdout)} bytes -> {out.relative_to(HERE.parents[1])}")
    return 1 if bad else 0


def record_debian(kernel: str, names: list[str]) -> int:
    """The Debian programs, in one boot whose initramfs holds the realprog root (all of them,
    in order: a later one may need what an earlier one wrote)."""
    import conftest                                   # tests/realprog/conftest.py: the root
    arch = KERNELS[kernel]
    root = conftest.build_root(arch)
    progs = [Program(root / exe.lstrip("/"), list(args), timeout=120, label=name, exe=exe)
             for name, exe, args in DEBIAN]
    res = boot(fetch_kernel(profile(kernel, arch)), progs, root=root)
    print(f"{kernel}: Linux {res.log.release}, boot {res.seconds:.0f} s with the Debian root")
    bad = 0
    for n, (name, _, _) in enumerate(DEBIAN):
        run = res.log.runs.get(n)
        if names and name not in names:
            continue
        if run is None or run.timed_out or run.errors:
            print(f"  {name}: NOT written ({run})")
            bad += 1
            continue
        out = expected_path(kernel, name)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(run.stdout + run.stderr + f"exit {run.exit_status}\n".encode())
        print(f"  {name}: exit {run.exit_status}, {len(run.stdout)}+{len(run.stderr)} bytes -> "
              f"{out.relative_to(HERE.parents[1])}")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", choices=sorted(KERNELS), action="append")
    ap.add_argument("probes", nargs="*")
    a = ap.parse_args()
    debian = {n for n, _, _ in DEBIAN}
    probes = [p for p in a.probes if p not in debian]
    wanted = [p for p in a.probes if p in debian]
    status = 0
    for k in a.kernel or sorted(KERNELS):
        if probes or not a.probes:
            status = max(status, record(k, probes))
        if wanted or not a.probes:
            status = max(status, record_debian(k, wanted))
    return status


if __name__ == "__main__":
    sys.exit(main())
