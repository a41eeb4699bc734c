"""The SVE experiment on the upstream fp-pidbench built from the Linux source (issue 14).

Runs beside ``arm64_sve`` (which uses emukern's own guest_asm/arm64/fp_pidbench.S with blocks and
a fourth "after SVE" phase): this one runs the kernel selftest itself, unmodified except for its
iteration count (``reproduce --full``: not even that).  When no Linux source can be had, it says
so and the figures above — from the project's own fp_pidbench.S — are the ones that ran.
"""
from __future__ import annotations

from typing import Any

from rich.table import Table

# host seconds of a full run on the 2-core development machine, roughly (orders reproduce's pool)
POOL_SECONDS = 7
TITLE = "arm64 SVE: the upstream fp-pidbench selftest (\"arm64/sve: performance improvements with SVE state saving\", Mark Brown)"
POLICIES = ("legacy", "p1", "p1+p2")
FREQ = 1_000_000          # as arm64_sve: a simulated second (the sve_timeout) is 1 M cycles
HZ = 100


def run(ctx: Any) -> dict[str, Any]:
    from emukern.selftests.pidbench import LOOPS, build, run_pidbench
    full = bool(getattr(ctx, "full", False))
    con = ctx.console
    elf, what, per_loop = build(full=full, fetch=not ctx.quick)
    if elf is None:
        con.print(f"upstream fp-pidbench not run: {what}.\n"
                  "The SVE figures above come from emukern's own guest_asm/arm64/fp_pidbench.S (the fallback).")
        return {"ran": "guest_asm/arm64/fp_pidbench.S (fallback)", "why": what}
    vls = (128,) if (full or ctx.quick) else (128, 256)
    rows = []
    with ctx.progress() as progress:
        task = progress.add_task("fp-pidbench", total=len(vls) * len(POLICIES))
        for vl in vls:
            for pol in POLICIES:
                progress.update(task, description=f"fp-pidbench {pol} VL {vl}")
                rows.append(run_pidbench(elf, pol, vl, FREQ, HZ))
                progress.advance(task)
    t = Table(title=f"{what}; {per_loop:,} getpid calls per loop; CNTVCT = CPU cycles at {FREQ / 1e6:g} MHz")
    for c in ("policy", "VL", *[f"{lp} (cycles/getpid)" for lp in LOOPS], "once vs none", "per-syscall vs none",
              "SVE traps", "wall s"):
        t.add_column(c, justify="right")
    for d in rows:
        c = d["cycles_per_getpid"]
        t.add_row(d["policy"], str(d["vl"]), *[f"{c[lp]:.1f}" for lp in LOOPS], f"{d['overhead_once_pct']:+.1f} %",
                  f"{d['overhead_per_syscall_pct']:+.1f} %", str(d["sve_traps"]), f"{d['wall_seconds']:.1f}")
    con.print(t)
    total_wall = sum(d["wall_seconds"] for d in rows)
    con.print(f"ran: {what}. {len(rows)} runs, {sum(d['getpid_calls'] for d in rows):,} getpid calls, "
              f"{total_wall:.1f} s wall." + ("" if full else " `emukern reproduce --full` runs the real count."))
    con.print("'SVE used once' is the whole loop after one SVE instruction: with p1+p2 TIF_SVE is dropped "
              "at the first syscall after the 1 s sve_timeout, so with more than ~1 s of loop the average "
              "falls towards 'No SVE'; legacy and p1 keep flushing the SVE state on every syscall.")
    return {"ran": what, "full": full, "getpid_per_loop": per_loop, "freq_hz": FREQ, "hz": HZ, "runs": rows,
            "wall_seconds": total_wall}
