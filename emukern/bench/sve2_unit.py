"""Micro-benchmark of the SVE2 unit on the CPU: host microseconds per SVE2 instruction.

A loop of N copies of one SVE2 word runs on a bare :class:`~emukern.machine.cpu_arm64.Arm64Cpu`
(no kernel: the closing ``brk`` stops it); the same loop with ``orr x10, x10, x10`` in its place
is the baseline, so the figure is what the unit adds per instruction: the UNDEF exit, two
microcode runs (save, load) and the Python instruction.  ``python -m emukern.bench.sve2_unit``.
"""
from __future__ import annotations

import time

CODE = 0x10_0000
DEFAULT_INSNS = ("sqabs z0.s, p0/m, z1.s", "eor3 z0.d, z0.d, z1.d, z2.d", "aese z0.b, z0.b, z1.b",
                 "bdep z0.d, z1.d, z2.d", "pmullb z0.q, z1.d, z2.d")


def _loop_seconds(body: str, n: int, vl: int) -> tuple[float, int]:
    from emukern.loader.asm import assemble_snippet
    from emukern.machine.clock import Clock
    from emukern.machine.cpu_arm64 import Arm64Cpu
    from emukern.machine.memory import AddressSpace
    code = assemble_snippet(f"ptrue p0.b\nmovz x9, #{n & 0xFFFF}\nmovk x9, #{n >> 16}, lsl #16\n"
                            f"1:\n{body}\nsubs x9, x9, #1\nb.ne 1b\nbrk #1", "arm64")
    cpu = Arm64Cpu(0, Clock(), sve_vl=vl)
    mm = AddressSpace()
    mm.map(CODE, 0x10000, "r-x", "code", code)
    cpu.attach_mm(mm)
    cpu.set_pc(CODE)
    cpu.enter_el0()
    cpu.set_sve_el0(True)
    cpu.on_trap = lambda c, trap: c.stop()
    t0 = time.perf_counter()
    cpu.run(cpu.now + 10 * n + 100)
    elapsed = time.perf_counter() - t0
    assert cpu.sve2 is not None
    return elapsed, cpu.sve2.insns


def bench_sve2(vl: int = 256, n: int = 20000, insns: tuple[str, ...] = DEFAULT_INSNS) -> dict[str, float]:
    """Microseconds per instruction each SVE2 word adds over a base instruction at VL ``vl``."""
    base, _ = _loop_seconds("orr x10, x10, x10", n, vl)
    out: dict[str, float] = {}
    for insn in insns:
        t, ran = _loop_seconds(insn, n, vl)
        if ran != n:
            raise RuntimeError(f"{insn}: the unit ran {ran} of {n} instructions")
        out[insn] = (t - base) / n * 1e6
    return out


if __name__ == "__main__":
    import sys
    vl = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    for k, v in bench_sve2(vl).items():
        print(f"VL {vl:4d}  {k:32s} {v:7.2f} us")
