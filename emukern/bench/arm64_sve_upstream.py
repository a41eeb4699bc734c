"""The SVE experiment on the upstream fp-pidbench (issue 14; its successor's fifth phase).

Runs beside ``arm64_sve`` (which uses emukern's own guest_asm/arm64/fp_pidbench.S with blocks and
a fourth "after SVE" phase): this one runs the kernel selftest itself, unmodified except for its
iteration count (``reproduce --full``: not even that).  It runs the newest fp-pidbench.S it can
get: a stored upstream copy (with "No SVE after SVE", the loop that shows patch 2's effect
directly) assembled against the Linux tree's helpers, else the tree's own.  The output and the
result name the file and commit that ran.  When no Linux source can be had, it says so and the
figures above — from the project's own fp_pidbench.S — are the ones that ran.
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


AFTER = "No SVE after SVE"      # the loop "kselftest/arm64: Add a no-SVE loop after SVE" added


def after_sve_check(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per VL, whether the "No SVE after SVE" loop orders the policies as patch 2 predicts.

    After the per-syscall SVE loop TIF_SVE is set.  legacy and p1 keep it (nothing reloads the
    state from memory in this single-task loop), so every getpid still pays the SVE flush and the
    loop costs what "SVE used once" costs; p1+p2 drops it at the first syscall once the 1 s
    sve_timeout has passed, so the loop falls back towards "No SVE".  Only signs and ratios of
    simulated cycles are checked, never host time."""
    out = []
    for vl in sorted({d["vl"] for d in rows}):
        by = {d["policy"]: d["cycles_per_getpid"] for d in rows if d["vl"] == vl}
        if AFTER not in by["legacy"]:
            continue
        leg, p1, p12 = by["legacy"], by["p1"], by["p1+p2"]
        checks = {
            "legacy still flushes after SVE (after > none)": leg[AFTER] > leg["No SVE"],
            "p1 = legacy here (no reload from memory in the loop)": abs(p1[AFTER] - leg[AFTER]) <= 0.01 * leg[AFTER],
            "p1+p2 cheaper than legacy after SVE": p12[AFTER] < leg[AFTER],
            "p1+p2 back nearer to none than to legacy": p12[AFTER] - p12["No SVE"] < leg[AFTER] - p12[AFTER],
        }
        out.append({"vl": vl, "legacy": leg[AFTER], "p1": p1[AFTER], "p1+p2": p12[AFTER], "none": leg["No SVE"],
                    "checks": checks, "ok": all(checks.values())})
    return out


def run(ctx: Any) -> dict[str, Any]:
    from emukern.selftests.pidbench import DEFAULT_PER_LOOP, build_newest, run_pidbench
    full = bool(getattr(ctx, "full", False))
    con = ctx.console
    # the newest source times four loops where 6.12's timed three: scale the default count by 3/4
    # so a run makes about as many getpid calls as before (reproduce's wall time); --quick a third
    per_loop = DEFAULT_PER_LOOP // 3 if ctx.quick else DEFAULT_PER_LOOP * 3 // 4
    b = build_newest(full=full, fetch=not ctx.quick, per_loop=per_loop)
    what = b["what"]
    if b["elf"] is None:
        con.print(f"upstream fp-pidbench not run: {what}.\n"
                  "The SVE figures above come from emukern's own guest_asm/arm64/fp_pidbench.S (the fallback).")
        return {"ran": "guest_asm/arm64/fp_pidbench.S (fallback)", "why": what}
    elf, loops, per_loop = b["elf"], b["loops"], b["per_loop"]
    vls = (128,) if (full or ctx.quick) else (128, 256)
    rows = []
    with ctx.progress() as progress:
        task = progress.add_task("fp-pidbench", total=len(vls) * len(POLICIES))
        for vl in vls:
            for pol in POLICIES:
                progress.update(task, description=f"fp-pidbench {pol} VL {vl}")
                rows.append(run_pidbench(elf, pol, vl, FREQ, HZ, loops))
                progress.advance(task)
    con.print(f"ran: {what}")
    t = Table(title=f"fp-pidbench ({len(loops)} timed loops); {per_loop:,} getpid calls per loop; "
                    f"CNTVCT = CPU cycles at {FREQ / 1e6:g} MHz")
    extra = [f"{lp} vs none" for lp in loops[1:]]
    for c in ("policy", "VL", *[f"{lp} (cycles/getpid)" for lp in loops], *extra, "SVE traps", "wall s"):
        t.add_column(c, justify="right")
    for d in rows:
        c = d["cycles_per_getpid"]
        t.add_row(d["policy"], str(d["vl"]), *[f"{c[lp]:.1f}" for lp in loops],
                  *[f"{100.0 * (c[lp] - c['No SVE']) / c['No SVE']:+.1f} %" for lp in loops[1:]],
                  str(d["sve_traps"]), f"{d['wall_seconds']:.1f}")
    con.print(t)
    total_wall = sum(d["wall_seconds"] for d in rows)
    con.print(f"{len(rows)} runs, {sum(d['getpid_calls'] for d in rows):,} getpid calls, {total_wall:.1f} s wall."
              + ("" if full else f" Scaled down from {b['real_per_loop']:,} getpid calls per loop; "
                                 "`emukern reproduce --full` runs the real count."))
    con.print("'SVE used once' is the whole loop after one SVE instruction: with p1+p2 TIF_SVE is dropped "
              "at the first syscall after the 1 s sve_timeout, so with more than ~1 s of loop the average "
              "falls towards 'No SVE'; legacy and p1 keep flushing the SVE state on every syscall.")
    checks = after_sve_check(rows)
    for ck in checks:
        con.print(f"'{AFTER}' at VL {ck['vl']} (patch 2's effect): legacy {ck['legacy']:.1f}, p1 {ck['p1']:.1f}, "
                  f"p1+p2 {ck['p1+p2']:.1f} cycles/getpid (never used SVE: {ck['none']:.1f}) -- "
                  + ("as patch 2 predicts: " if ck["ok"] else "NOT as patch 2 predicts: ")
                  + "; ".join(f"{k}: {'yes' if v else 'NO'}" for k, v in ck["checks"].items()))
    return {"ran": what, "file": b["file"], "commit": b["commit"], "loops": list(loops), "full": full,
            "scaled": b["scaled"], "getpid_per_loop": per_loop, "real_getpid_per_loop": b["real_per_loop"],
            "freq_hz": FREQ, "hz": HZ, "runs": rows, "after_sve": checks, "wall_seconds": total_wall}
