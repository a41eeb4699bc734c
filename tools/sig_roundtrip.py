"""Host CPU time per signal round trip of guest_asm/<arch>/sig_loop.S (kill -> handler ->
rt_sigreturn) through emukern.api.Machine: the CPU-time difference of two loop counts over the
count difference, so machine start-up and exit cancel out.

    python tools/sig_roundtrip.py [--arch riscv64|arm64] [--lo N] [--hi N] [--reps R] [--profile]

Also prints the null syscall (syscall_loop.S) figure the same way, for the ratio, with --null.
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import time

from emukern.api import Machine
from emukern.bench.selfbench import _elf


def cpu_seconds(arch: str, name: str, n: int, prof: cProfile.Profile | None = None) -> float:
    m = Machine(arch=arch)
    m.explicit_arch = arch
    m.load(_elf(arch, name), [str(n)])
    t = time.process_time()
    if prof is not None:
        prof.enable()
    r = m.run()
    if prof is not None:
        prof.disable()
    dt = time.process_time() - t
    assert r.exit_status == 0, r.message
    return dt


def per_iter_us(arch: str, name: str, lo: int, hi: int) -> float:
    return (cpu_seconds(arch, name, hi) - cpu_seconds(arch, name, lo)) / (hi - lo) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", default="riscv64")
    ap.add_argument("--lo", type=int, default=2000)
    ap.add_argument("--hi", type=int, default=12000)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--null", action="store_true")
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    if a.profile:
        prof = cProfile.Profile()
        cpu_seconds(a.arch, "sig_loop", a.hi, prof)
        pstats.Stats(prof).sort_stats("tottime").print_stats(45)
        return
    for _ in range(a.reps):
        s = per_iter_us(a.arch, "sig_loop", a.lo, a.hi)
        line = f"{a.arch} signal {s:.2f} us"
        if a.null:
            nl = per_iter_us(a.arch, "syscall_loop", a.lo, a.hi)
            line += f"  null {nl:.2f} us  ratio {s / nl:.2f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
