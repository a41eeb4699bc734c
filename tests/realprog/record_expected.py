"""Record what Debian 13's real kernels print for the probes of probes.py (one boot per kernel
for the C probes, one more with the realprog guest root as the initramfs's tree for the Debian
programs; under qemu-system through emukern.oracle, seconds to minutes per boot under TCG).

    PYTHONPATH=. python tests/realprog/record_expected.py [--kernel debian-13-arm64] [NAME ...]

writes tests/realprog/expected/<kernel>/<name>.expected: stdout, then stderr (empty for the C
probes, or the recording is refused), then a last line ``exit <status>``.  A run that timed out
is reported and not written.  A new probe (the rseq, PAC and sched_yield probes once they land)
is recorded by adding it to probes.PROBES (and to probes.ONLY if it belongs to one kernel) and
naming it here; the tests pick it up from its file."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))                 # tests/: cguests.py
sys.path.insert(0, str(HERE))                        # first: this directory's conftest.py

from cguests import build_cguest  # noqa: E402
from probes import DEBIAN, KERNELS, PROBES, expected_path, runs_on  # noqa: E402

from emukern.oracle.console import ProgramRun  # noqa: E402
from emukern.oracle.initramfs import Program  # noqa: E402
from emukern.oracle.kernels import fetch_kernel, profile  # noqa: E402
from emukern.oracle.qemu import boot  # noqa: E402
from emukern.oracle.session import RealKernel  # noqa: E402


def _text(run: ProgramRun) -> bytes:
    return run.stdout + run.stderr + f"exit {run.exit_status}\n".encode()


def probe_outputs(kernel: str, real: RealKernel | None = None) -> tuple[str, dict[str, ProgramRun]]:
    """Every C probe of PROBES that runs on ``kernel``, in one boot (cached on disk by content)."""
    arch = KERNELS[kernel]
    chosen = [(n, src, a) for n, src, a in PROBES if runs_on(n, kernel)]
    progs = [(build_cguest(src, arch), list(a)) for _, src, a in chosen]
    ans = (real or RealKernel(disk_cache=True)).run_many(progs, kernel=kernel, timeout=120)
    print(f"{kernel}: Linux {ans.release}, boot {ans.seconds:.0f} s{' (cached)' if ans.cached else ''}")
    return ans.release, {n: run for (n, _, _), run in zip(chosen, ans.runs)}


def debian_outputs(kernel: str) -> tuple[str, dict[str, ProgramRun]]:
    """The Debian programs, in one boot whose initramfs holds the realprog root (all of them, in
    order: a later one may need what an earlier one wrote)."""
    import conftest                                   # tests/realprog/conftest.py: the root
    arch = KERNELS[kernel]
    root = conftest.build_root(arch)
    progs = [Program(root / exe.lstrip("/"), list(args), timeout=120, label=name, exe=exe)
             for name, exe, args in DEBIAN]
    res = boot(fetch_kernel(profile(kernel, arch)), progs, root=root)
    print(f"{kernel}: Linux {res.log.release}, boot {res.seconds:.0f} s with the Debian root")
    return res.log.release or "?", {name: res.log.runs.get(n, ProgramRun(n)) for n, (name, _, _) in enumerate(DEBIAN)}


def _write(kernel: str, runs: dict[str, ProgramRun], names: list[str], stderr_ok: bool) -> int:
    bad = 0
    for name, run in runs.items():
        if names and name not in names:
            continue
        if run.timed_out or run.errors or (run.stderr and not stderr_ok):
            print(f"  {name}: NOT written (timed out {run.timed_out}, stderr {run.stderr[-300:]!r}, "
                  f"errors {run.errors})")
            bad += 1
            continue
        out = expected_path(kernel, name)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(_text(run))
        print(f"  {name}: exit {run.exit_status}, {len(run.stdout)}+{len(run.stderr)} bytes -> "
              f"{out.relative_to(HERE.parents[1])}")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", choices=sorted(KERNELS), action="append")
    ap.add_argument("names", nargs="*", help="probes.PROBES / probes.DEBIAN names (default: all)")
    a = ap.parse_args()
    debian = {n for n, _, _ in DEBIAN}
    probes = [p for p in a.names if p not in debian]
    wanted = [p for p in a.names if p in debian]
    status = 0
    for k in a.kernel or sorted(KERNELS):
        if probes or not a.names:
            status = max(status, _write(k, probe_outputs(k)[1], probes, stderr_ok=False))
        if wanted or not a.names:
            status = max(status, _write(k, debian_outputs(k)[1], wanted, stderr_ok=True))
    return status


if __name__ == "__main__":
    sys.exit(main())
