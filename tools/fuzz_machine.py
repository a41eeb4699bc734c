#!/usr/bin/env python3
"""Throw random instruction words at both machines and check the host survives.

Each case: a tiny program that first turns the vector unit on (RISC-V vsetvli / arm64 rdvl +
ptrue, so the RVV unit, the SVE trap and the SVE stubs are reached), followed by N random words
biased towards the vector/SVE, load/store and system encodings, run with an instruction budget
on 1 or 2 CPUs.  Any Python exception escaping Machine.run() is a bug (the guest must end in an
exit, a signal, the budget or a deadlock report).  Deterministic for a given --seed.

    .venv/bin/python tools/fuzz_machine.py --seed 7 --cases 6000
"""
from __future__ import annotations

import argparse
import random
import sys
import tempfile
import traceback
from pathlib import Path

from emukern.api import Machine
from emukern.loader.asm import assemble

RV_OPS = [0x57, 0x07, 0x27, 0x73, 0x03, 0x23, 0x13, 0x33, 0x6F, 0x67, 0x63]


def build(d: Path) -> dict[str, Path]:
    elfs = {}
    for arch in ("riscv64", "arm64"):
        pre = "    vsetvli t0, zero, e32, m1, ta, ma\n" if arch == "riscv64" else "    rdvl x0, #1\n    ptrue p0.b\n"
        tail = "    li a7, 94\n    ecall\n" if arch == "riscv64" else "    mov x8, #94\n    svc #0\n"
        src = d / f"pad_{arch}.S"
        src.write_text(f"# arch: {arch}\n.globl _start\n_start:\n{pre}" + "    nop\n" * 64 + tail)
        elfs[arch] = assemble(src, arch)
    return elfs


def words_for(arch: str, rng: random.Random) -> list[int]:
    n = rng.randint(1, 48)
    if arch == "riscv64":
        return [(rng.getrandbits(32) & ~0x7F) | rng.choice(RV_OPS) if rng.random() < 0.8 else rng.getrandbits(32)
                for _ in range(n)]
    return [(rng.getrandbits(32) & ~(0xF << 25)) | (0b0010 << 25) if rng.random() < 0.5 else rng.getrandbits(32)
            for _ in range(n)]


def fuzz(seed: int, cases: int) -> list[str]:
    """Run ``cases`` random cases from ``seed``; the host exceptions, described (empty: none)."""
    elfs = build(Path(tempfile.mkdtemp()))
    rng = random.Random(seed)
    failures: list[str] = []
    for i in range(cases):
        arch = rng.choice(["riscv64", "arm64"])
        words = words_for(arch, rng)
        m = Machine(max_insns=20_000, cpus=rng.choice([1, 2]))
        m.load(elfs[arch])
        k = m.kernel
        entry = k.image.entry + (4 if arch == "riscv64" else 8)
        k.init_task.mm.write(entry, b"".join(w.to_bytes(4, "little") for w in words), need="r")
        try:
            m.run()
        except Exception as e:  # noqa: BLE001 - that is what we are looking for
            failures.append(f"case {i}: host exception on {arch}: {[hex(w) for w in words]}\n"
                            + "".join(traceback.format_exception(e)[-3:]))
    return failures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=2000)
    a = ap.parse_args()
    failures = fuzz(a.seed, a.cases)
    for f in failures:
        print(f, file=sys.stderr)
    print(f"{a.cases} cases, {len(failures)} host exceptions")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
