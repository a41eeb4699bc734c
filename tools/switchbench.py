"""Host CPU time of a context switch and of fork+exit+wait, emukern against qemu-user (issue 30).

Builds guest_asm/c/pipe_pingpong.c for each architecture (cross gcc, static) and runs it under
``emukern run -q`` and qemu-user, alternately, each at two counts; the difference of the two
runs' CPU time (user + system of the whole process, from wait4's rusage) divided by the count
difference is the cost of one iteration with start-up removed.  Prints the median over the
repetitions and the ratio of the medians.

    PYTHONPATH=$PWD python tools/switchbench.py [--reps 3] [--arch arm64] [--emukern-tree DIR]

Modes: ``p`` a pipe round trip between two processes (two switches between address spaces),
``t`` the same between two threads, ``f`` fork + _exit + waitpid, ``F`` the same after the parent wrote 32 MiB of heap.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import resource
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "guest_asm" / "c" / "pipe_pingpong.c"
CC = {"riscv64": "riscv64-linux-gnu-gcc", "arm64": "aarch64-linux-gnu-gcc"}
QEMU = {"riscv64": ["qemu-riscv64"], "arm64": ["qemu-aarch64", "-cpu", "max"]}
COUNTS = {"p": (100, 600), "t": (100, 600), "f": (10, 60), "F": (5, 25)}
EXTRA = {"F": ["32"]}             # MiB of heap the parent writes before its forks
WHAT = {"p": "pipe round trip, processes", "t": "pipe round trip, threads", "f": "fork+exit+wait",
        "F": "fork+exit+wait, 32 MiB dirty"}


def build(arch: str) -> Path:
    from emukern.debian import cache_root
    digest = hashlib.sha256(SRC.read_bytes() + CC[arch].encode()).hexdigest()[:16]
    out = cache_root() / "test-guests" / f"pipe_pingpong-{arch}-{digest}"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([CC[arch], "-O2", "-static", "-o", str(out), str(SRC), "-lpthread"], check=True)
    return out


def cpu_seconds(cmd: list[str], env: dict[str, str]) -> float:
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, capture_output=True, env=env, cwd=env.get("PYTHONPATH", "/"))
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.decode()[-800:]}")
    return (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--arch", choices=sorted(CC), action="append")
    ap.add_argument("--mode", choices=sorted(COUNTS), action="append")
    ap.add_argument("--emukern-tree", default=str(ROOT), help="the emukern source tree to time")
    a = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=a.emukern_tree)
    ek = [sys.executable, "-c", "import sys; from emukern.cli import main; sys.argv[0] = 'emukern'; sys.exit(main())",
          "run", "-q"]
    for arch in a.arch or sorted(CC):
        if shutil.which(CC[arch]) is None or shutil.which(QEMU[arch][0]) is None:
            print(f"{arch}: skipped ({CC[arch]} or {QEMU[arch][0]} not installed)")
            continue
        elf = build(arch)
        for mode in a.mode or ["p", "t", "f", "F"]:
            n1, n2 = COUNTS[mode]
            per: dict[str, list[float]] = {"emukern": [], "qemu": []}
            for _ in range(a.reps):                 # alternated: emukern, qemu, emukern, ...
                for who, base in (("emukern", ek), ("qemu", QEMU[arch])):
                    extra = EXTRA.get(mode, [])
                    t1 = cpu_seconds([*base, str(elf), mode[0].lower(), str(n1), *extra], env)
                    t2 = cpu_seconds([*base, str(elf), mode[0].lower(), str(n2), *extra], env)
                    per[who].append((t2 - t1) / (n2 - n1))
            e, q = statistics.median(per["emukern"]), statistics.median(per["qemu"])
            ratio = f"{e / q:7.1f}x" if q > 0 else "    n/a"
            print(f"{arch:8s} {WHAT[mode]:28s} emukern {e * 1e6:9.1f} us  qemu-user {q * 1e6:7.1f} us  "
                  f"ratio {ratio}   (CPU per iteration, median of {a.reps}, counts {n1}/{n2})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
