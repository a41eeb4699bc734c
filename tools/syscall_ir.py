"""Host instructions per null syscall (getppid of guest_asm/ARCH/syscall_loop.S) under emukern,
counted by valgrind's callgrind: a figure that does not move with the machine's load, for
comparing two trees while other jobs share the cores (wall and even CPU time swing by 1.5-2x
there).

    PYTHONPATH=TREE python tools/syscall_ir.py [ARCH ...] [--small N] [--large N]

For each arch it runs Machine.run() on syscall_loop.S twice under callgrind, with N_small and
N_large iterations (default 3000 and 13000), and prints (Ir(large) - Ir(small)) / (large -
small): start-up, imports and the run's set-up cancel out.  Needs valgrind (apt-get install
valgrind); one arch takes about a minute and a half.  A garbage collection that lands in one run
and not the other moves the figure by a few hundred instructions.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

_RUN = """
import sys
from emukern.api import Machine
from emukern.bench.selfbench import _elf
arch, n = sys.argv[1], int(sys.argv[2])
m = Machine(arch=arch, max_insns=None)
m.explicit_arch = arch
m.load(_elf(arch, "syscall_loop"), [str(n)])
r = m.run()
assert r.exit_status == 0, r.message
"""


def total_ir(arch: str, n: int, tmp: str) -> int:
    """Instructions callgrind counted for the whole process running ``n`` getppid calls."""
    out = os.path.join(tmp, f"cg-{arch}-{n}.out")
    res = subprocess.run(["valgrind", "--tool=callgrind", "--smc-check=all-non-file", f"--callgrind-out-file={out}",
                          sys.executable, "-c", _RUN, arch, str(n)], capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"{arch} n={n} failed under valgrind:\n{res.stderr[-2000:]}")
    m = re.search(r"Collected : (\d+)", res.stderr)
    if m is None:
        raise SystemExit(f"no instruction count in valgrind's output:\n{res.stderr[-2000:]}")
    return int(m.group(1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("arch", nargs="*", default=["riscv64", "arm64"], choices=["riscv64", "arm64"])
    ap.add_argument("--small", type=int, default=3000)
    ap.add_argument("--large", type=int, default=13000)
    a = ap.parse_args(argv)
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    if a.large <= a.small:
        raise SystemExit("--large must be more than --small")
    with tempfile.TemporaryDirectory(prefix="syscall_ir.") as tmp:
        for arch in a.arch:
            lo, hi = total_ir(arch, a.small, tmp), total_ir(arch, a.large, tmp)
            print(f"{arch}: {(hi - lo) / (a.large - a.small):.0f} host instructions per getppid "
                  f"(callgrind, n={a.large} minus n={a.small})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
