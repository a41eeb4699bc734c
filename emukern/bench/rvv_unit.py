"""RVV unit benchmark (issue 3): how long one emulated vector instruction takes, and a vector
memcpy under emukern vs qemu-riscv64.

(a) *unit*: :func:`emukern.machine.rvv.bench.bench_rvv` — ``RVVUnit.execute`` called directly
    (vadd.vv, vle32.v, vse32.v at e32, LMUL 1 and 8), the unit's own cost per instruction;
(b) *trap path*: ``guest_asm/riscv/vec_loop.S`` run by emukern — a loop of 16 vadd.vv (or 8
    vle32.v + vse32.v pairs, "vle32+vse32") per iteration; every vector instruction raises Unicorn's
    illegal-instruction exception, is fetched, decoded (cached) and executed by the unit, and
    the PC is advanced.  Figure = wall time of ``Machine.run()`` / vector instructions retired
    (the two scalar loop instructions per 16 vector ones are included, and are negligible);
(c) *memcpy*: ``guest_asm/riscv/vec_memcpy.S`` copying 64 KiB (e8, m8 strip-mining, then a
    scalar compare) under emukern (``Machine.load`` + ``run``, in process) and under
    ``qemu-riscv64 -cpu rv64,v=true,vlen=256`` (whole-process wall time, start-up included),
    their ratio, and whether both printed the same bytes.

VLEN is 256.  The target for (a) and (b) is at most 3 µs per LMUL=1 instruction.  Each figure
is the best of a few repeats (one in quick mode) because this runs on shared machines.
"""
from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from emukern.resources import guest_asm_dir

TITLE = "RVV unit: µs per emulated vector instruction, vector memcpy vs qemu-riscv64"
GUEST = guest_asm_dir() / "riscv"
VLEN = 256
TARGET_US_M1 = 3.0      # issue 19: an RVV m1 instruction through the trap path <= 3 us
MEMCPY_BYTES = 65536
# vtype values for vec_loop.S: e32 (vsew=2) with LMUL=1 / LMUL=8, tu, mu
VTYPES = {"m1": 2 << 3 | 0, "m8": 2 << 3 | 3}
LOOP_KINDS = {"vadd.vv": 0, "vle32+vse32": 1}


def _elf(name: str) -> Path:
    from emukern.loader.asm import assemble
    return assemble(GUEST / f"{name}.S", "riscv64")


def _qemu_cmd(vlen: int = VLEN) -> list[str] | None:
    q = shutil.which("qemu-riscv64")
    return None if q is None else [q, "-cpu", f"rv64,v=true,vlen={vlen},elen=64,vext_spec=v1.0"]


def unit_us(quick: bool) -> dict[str, float]:
    """(a) µs per ``RVVUnit.execute`` call, best of the repeats."""
    from emukern.machine.rvv.bench import bench_rvv
    n, reps = (2000, 1) if quick else (20000, 3)
    best: dict[str, float] = {}
    for _ in range(reps):
        for k, v in bench_rvv(vlen=VLEN, n=n).items():
            best[k] = min(v, best.get(k, v))
    return best


def trap_path_us(quick: bool) -> dict[str, dict[str, float]]:
    """(b) µs per vector instruction through Unicorn's trap path, best of the repeats."""
    from emukern.api import Machine
    iters, reps = (100, 1) if quick else (2000, 3)
    elf = _elf("vec_loop")
    out: dict[str, dict[str, float]] = {}
    for kname, kind in LOOP_KINDS.items():
        for lname, vtype in VTYPES.items():
            best: dict[str, float] | None = None
            for _ in range(reps):
                m = Machine(vlen=VLEN, max_insns=None).load(elf, [str(iters), str(vtype), str(kind)])
                t, c = time.perf_counter(), time.process_time()
                r = m.run()
                wall, cpu_s = time.perf_counter() - t, time.process_time() - c
                if r.exit_status != 0:
                    raise RuntimeError(f"vec_loop {kname} {lname} exited {r.exit_status}")
                cpu = m.cpu(0)
                n = cpu.vector_insns
                d = {"us_per_insn": wall / n * 1e6, "cpu_us_per_insn": cpu_s / n * 1e6,
                     "vector_insns": n, "wall_s": wall, "cycles_per_insn": cpu.vector_cycles / n}
                if best is None or d["us_per_insn"] < best["us_per_insn"]:
                    best = d
            assert best is not None
            out[f"{kname} e32 {lname}"] = best
    return out


def memcpy_vs_qemu(quick: bool, nbytes: int = MEMCPY_BYTES) -> dict[str, Any]:
    """(c) the 64 KiB vector memcpy under emukern and under qemu-riscv64."""
    from emukern.api import Machine
    reps = 1 if quick else 3
    elf = _elf("vec_memcpy")
    ek_best, stdout, status, vinsns = float("inf"), b"", -1, 0
    for _ in range(reps):
        t = time.perf_counter()
        m = Machine(vlen=VLEN).load(elf, [str(nbytes)])
        r = m.run()
        ek_best = min(ek_best, time.perf_counter() - t)
        stdout, status, vinsns = r.stdout, r.exit_status, m.cpu(0).vector_insns
    res: dict[str, Any] = {"bytes": nbytes, "emukern_s": ek_best, "emukern_status": status,
                           "vector_insns": vinsns, "qemu_s": None, "qemu_status": None,
                           "ratio": None, "stdout_match": None, "note": ""}
    cmd = _qemu_cmd()
    if cmd is None:
        res["note"] = "qemu-riscv64 not installed: qemu column skipped (apt-get install qemu-user)"
        return res
    q_best, q_out, q_status = float("inf"), b"", -1
    for _ in range(reps):
        t = time.perf_counter()
        p = subprocess.run(cmd + [str(elf), str(nbytes)], capture_output=True, timeout=120)
        q_best = min(q_best, time.perf_counter() - t)
        q_out, q_status = p.stdout, p.returncode
    res.update(qemu_s=q_best, qemu_status=q_status, ratio=ek_best / q_best,
               stdout_match=(q_out == stdout))
    return res


def measure(quick: bool = False) -> dict[str, Any]:
    unit = unit_us(quick)
    trap = trap_path_us(quick)
    mc = memcpy_vs_qemu(quick)
    m1_unit = max(v for k, v in unit.items() if k.endswith("m1"))
    m1_trap = max(v["us_per_insn"] for k, v in trap.items() if k.endswith("m1"))
    return {"vlen": VLEN, "quick": quick, "target_us_m1": TARGET_US_M1,
            "unit_us": unit, "trap_path": trap, "memcpy": mc,
            "worst_m1_unit_us": m1_unit, "worst_m1_trap_path_us": m1_trap,
            "unit_meets_target": m1_unit <= TARGET_US_M1,
            "trap_path_meets_target": m1_trap <= TARGET_US_M1}


def print_tables(res: dict[str, Any], console: Console) -> None:
    t = Table(title=f"µs per emulated vector instruction (VLEN={res['vlen']}, e32)")
    for c in ("insn", "LMUL", "unit µs", "trap µs", "trap CPU µs", "overhead µs", "cycles"):
        t.add_column(c, justify="right")
    for kname in LOOP_KINDS:
        for lname in VTYPES:
            tp = res["trap_path"][f"{kname} e32 {lname}"]
            if kname == "vadd.vv":
                u = res["unit_us"][f"vadd.vv e32 {lname}"]
                unit = f"{u:.2f}"
            else:
                ul, us = res["unit_us"][f"vle32.v e32 {lname}"], res["unit_us"][f"vse32.v e32 {lname}"]
                u = (ul + us) / 2
                unit = f"{ul:.2f}/{us:.2f}"
            t.add_row(kname, lname, unit, f"{tp['us_per_insn']:.2f}", f"{tp['cpu_us_per_insn']:.2f}",
                      f"{tp['us_per_insn'] - u:.2f}", f"{tp['cycles_per_insn']:.1f}")
    console.print(t)
    ok = "[green]meets[/]" if res["unit_meets_target"] else "[red]misses[/]"
    ok2 = "[green]meets[/]" if res["trap_path_meets_target"] else "[red]misses[/]"
    console.print(f"target ≤ {res['target_us_m1']:.0f} µs per LMUL=1 instruction: unit {ok} "
                  f"(worst {res['worst_m1_unit_us']:.2f} µs), trap path {ok2} "
                  f"(worst {res['worst_m1_trap_path_us']:.2f} µs).  unit = RVVUnit.execute alone; "
                  "trap = vec_loop.S through Unicorn's illegal-instruction hook + fetch + unit + PC "
                  "update, wall time (trap CPU = this process's CPU time, steadier on a shared "
                  "machine); overhead = trap - unit; cycles = emulated cycles per instruction.")
    mc = res["memcpy"]
    t2 = Table(title=f"vector memcpy of {mc['bytes'] // 1024} KiB (vec_memcpy.S, e8 m8)")
    for c in ("emukern s", "qemu-riscv64 s", "ratio emukern/qemu", "vector insns", "same stdout"):
        t2.add_column(c, justify="right")
    t2.add_row(f"{mc['emukern_s']:.3f}",
               f"{mc['qemu_s']:.3f}" if mc["qemu_s"] is not None else "n/a",
               f"{mc['ratio']:.1f}×" if mc["ratio"] is not None else "n/a",
               str(mc["vector_insns"]),
               {True: "yes", False: "[red]NO[/]", None: "n/a"}[mc["stdout_match"]])
    console.print(t2)
    console.print("emukern time = Machine.load + run in this process; qemu time = whole process "
                  "(its start-up included); both include the scalar fill and compare loops."
                  + (f"  {mc['note']}" if mc["note"] else ""))


def run(ctx: Any) -> dict[str, Any]:
    res = measure(ctx.quick)
    print_tables(res, ctx.console)
    return res


def main(quick: bool = False) -> int:
    print_tables(measure(quick), Console(highlight=False))
    return 0


if __name__ == "__main__":
    import sys
    raise SystemExit(main("--quick" in sys.argv))
