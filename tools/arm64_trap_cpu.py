"""Host *CPU* time (time.process_time of Machine.run) of the arm64 trap-path figures, for comparing
two trees on a loaded machine, where ``emukern bench``'s wall-clock samples swing by 2x: a process
that waits for a core is not charged for the wait.

    PYTHONPATH=TREE python tools/arm64_trap_cpu.py [--rounds N]

prints, for the tree on PYTHONPATH, the median over N rounds of
* the signal round trip (guest_asm/arm64/sig_loop.S 5000) and the null syscall (syscall_loop.S
  20000) in µs, and their ratio taken within each round (what ``bench --only signal`` reports);
* fp-pidbench (guest_asm/arm64/fp_pidbench.S 1000 4, all four loops) in µs per getpid.
Alternate two trees (A, B, A, B, ...) and compare medians; the lead's quiet-machine figures
still come from ``emukern bench``.
"""
from __future__ import annotations

import statistics
import sys
import time

from emukern.api import Machine
from emukern.bench.selfbench import _elf


def cpu_us(name: str, argv: list[str], per: str | int) -> float:
    m = Machine(arch="arm64", max_insns=None)
    m.explicit_arch = "arm64"
    m.load(_elf("arm64", name), argv)
    t = time.process_time()
    r = m.run()
    dt = time.process_time() - t
    if r.exit_status != 0:
        raise SystemExit(f"{name} exited with {r.exit_status}: {r.message}")
    n = r.syscalls.get(per, 0) if isinstance(per, str) else per
    return dt / n * 1e6


def main(argv: list[str]) -> None:
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 5
    cpu_us("sig_loop", ["200"], 200)            # warm-up: assembly, imports
    cpu_us("syscall_loop", ["200"], 200)
    sig, null, ratio, pid = [], [], [], []
    for _ in range(rounds):
        s = cpu_us("sig_loop", ["5000"], 5000)
        z = cpu_us("syscall_loop", ["20000"], 20000)
        sig.append(s)
        null.append(z)
        ratio.append(s / z)
        pid.append(cpu_us("fp_pidbench", ["1000", "4"], "getpid"))
    med = statistics.median
    print(f"arm64 signal round trip {med(sig):.1f} us cpu, null syscall {med(null):.2f} us cpu, "
          f"ratio {med(ratio):.2f} [{min(ratio):.2f}-{max(ratio):.2f}]; "
          f"fp-pidbench {med(pid):.2f} us cpu/getpid [{min(pid):.2f}-{max(pid):.2f}] ({rounds} rounds)")


if __name__ == "__main__":
    main(sys.argv[1:])
