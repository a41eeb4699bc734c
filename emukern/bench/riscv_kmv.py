"""Stale vector contexts from kernel-mode vector user copies (RISC-V).

Linux >= 6.8 copies user buffers of at least CONFIG_RISCV_ISA_V_UCOPY_THRESHOLD bytes with RVV
instructions inside ``kernel_vector_begin()/kernel_vector_end()``.  Under "riscv: vector: treat
VS_INITIAL as discard" (Andy Chiu) the task's context is Initial throughout a syscall, so
``kernel_vector_begin`` saves nothing and the return to user reloads the last *saved* context.
This experiment measures, for a write-heavy vector program (guest_asm/riscv/vec_write_loop.S: v1
holds a value across a 4 KiB write() + read() on a pipe), how often the program finds its
vector register changed, and what an iteration costs, with and without vectorised user copies,
under both policies and both values of ``abi.riscv_v_vstate_discard``.  The points run through
`emukern sweep`'s machinery (a process pool over the grid).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table

from emukern.resources import guest_asm_dir

# host seconds of a full run on the 2-core development machine, roughly (orders reproduce's pool)
POOL_SECONDS = 1.2
TITLE = "RISC-V kernel-mode vector: stale vector contexts after large user copies"
GUEST = guest_asm_dir() / "riscv" / "vec_write_loop.S"
VLEN = 512
SIZE = 4096


def grid(iters: int) -> dict[str, Any]:
    return {"sweep": {"programs": [str(GUEST)], "args": [str(iters), str(SIZE)]},
            "options": {"vlen": VLEN},
            "grid": {"policy": ["riscv-discard=eager", "riscv-discard=deferred"],
                     "sysctl": ["abi.riscv_v_vstate_discard=0", "abi.riscv_v_vstate_discard=1"],
                     "kconfig": ["RISCV_ISA_V_UCOPY_THRESHOLD=0", "RISCV_ISA_V_UCOPY_THRESHOLD=768"]}}


def _counts(stdout: str) -> tuple[int, int]:
    """vec_write_loop's "kept=K lost=L" line."""
    from emukern.api import result_fields
    got = result_fields(stdout)
    return got["kept"], got["lost"]


def run(ctx: Any) -> dict[str, Any]:
    from emukern.sweep.runner import LocalExecutor, run_sweep
    from emukern.sweep.spec import build_spec
    iters = 50 if ctx.quick else 400
    spec = build_spec(grid(iters), GUEST.parent)
    sweep = run_sweep(spec.points, LocalExecutor(), None)
    rows: list[dict[str, Any]] = []
    for rec in sweep.records:
        if not rec["ok"]:
            raise RuntimeError(f"{rec['label']}: {rec['error']}")
        res = rec["result"]
        if res["exit_status"] != 0:
            raise RuntimeError(f"{rec['label']}: guest exited {res['exit_status']}")
        kept, lost = _counts(res["stdout"])
        ax = rec["axes"]
        rows.append({"policy": ax["policy"].split("=")[1],
                     "discard": int(ax["sysctl"].split("=")[1]),
                     "threshold": int(ax["kconfig"].split("=")[1]),
                     "kept": kept, "lost": lost, "lost_pct": 100.0 * lost / max(kept + lost, 1),
                     "cycles_per_iter": res["cycles"] / iters, "kernel_cycles": res["kernel_cycles"]})
    _table(ctx, rows, iters)
    _plot(ctx, rows)
    broken = [r for r in rows if r["discard"] == 0 and r["lost"]]
    for r in broken:
        ctx.console.print(f"[bold red]knob promise broken[/]: riscv-discard={r['policy']}, "
                          f"abi.riscv_v_vstate_discard=0, threshold {r['threshold']}: v1 changed in "
                          f"{r['lost']} of {r['kept'] + r['lost']} iterations ({r['lost_pct']:.0f} %)")
    if not broken:
        ctx.console.print("abi.riscv_v_vstate_discard=0 kept every vector register in every configuration")
    return {"iterations": iters, "write_bytes": SIZE, "vlen": VLEN, "rows": rows,
            "knob_broken": [{k: r[k] for k in ("policy", "threshold", "lost_pct")} for r in broken]}


def _table(ctx: Any, rows: list[dict[str, Any]], iters: int) -> None:
    t = Table(title=f"vec_write_loop: {iters} × (v1 = i; write {SIZE} B; read {SIZE} B; check v1), VLEN {VLEN}")
    for c in ("riscv-discard", "abi.riscv_v_vstate_discard", "usercopy threshold", "v1 kept", "v1 lost",
              "lost %", "cycles / iteration"):
        t.add_column(c, justify="right", no_wrap=True)
    for r in rows:
        t.add_row(r["policy"], str(r["discard"]), "off" if r["threshold"] == 0 else str(r["threshold"]),
                  f"{r['kept']:,}", f"{r['lost']:,}", f"{r['lost_pct']:.0f} %", f"{r['cycles_per_iter']:,.0f}")
    ctx.console.print(t)
    ctx.console.print("With the knob at 1 every iteration loses v1 by design (the ABI clobbers vector state "
                      "at syscalls). With the knob at 0 the registers must survive; a 'lost' count there is "
                      "a stale context reloaded by the return to user after kernel-mode vector.")


def _plot(ctx: Any, rows: list[dict[str, Any]]) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from emukern.kernel.policies import PATCHES
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(14, 5.2))
    # what the figure is about: the patch whose deferred discard goes stale, and the knob whose
    # promise (0 = keep vector registers across syscalls) it breaks
    fig.suptitle(f"Kernel-mode vector user copies under \"{PATCHES['riscv-discard'].subject}\" "
                 f"({PATCHES['riscv-discard'].author}),\nwith the sysctl abi.riscv_v_vstate_discard "
                 f"(0 = keep vector registers across syscalls, 1 = discard them) from "
                 f"\"{PATCHES['riscv-vstate-sysctl'].subject}\" ({PATCHES['riscv-vstate-sysctl'].author})",
                 fontsize=9)
    labels = [f"{r['policy']}\nsysctl {r['discard']}\n{'scalar' if r['threshold'] == 0 else 'vector'} copy"
              for r in rows]
    xlabel = "riscv-discard policy / abi.riscv_v_vstate_discard / how the kernel copies user buffers"
    xs = range(len(rows))
    bars = a1.bar(xs, [r["lost_pct"] for r in rows], color=["#c44" if r["discard"] == 0 and r["lost"] else "#888"
                                                             for r in rows])
    a1.bar_label(bars, fmt="%.0f %%", fontsize=7)            # 0 % bars stay readable
    a1.set_xticks(list(xs), labels, fontsize=7)
    a1.set_ylabel("iterations whose v1 changed (% of iterations)")
    a1.set_ylim(0, 105)
    a1.set_xlabel(xlabel, fontsize=8)
    a1.set_title("vector register lost across write()+read()\n(red: sysctl at 0, yet v1 changed: the promise broken)",
                 fontsize=10)
    a2.bar_label(a2.bar(xs, [r["cycles_per_iter"] for r in rows], color="#47a"), fmt="%.0f", fontsize=7)
    a2.set_xticks(list(xs), labels, fontsize=7)
    a2.set_ylabel("simulated cycles per iteration")
    a2.set_xlabel(xlabel, fontsize=8)
    a2.set_title(f"cost of one iteration ({SIZE} B write + read, VLEN {VLEN} bits)", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    path = Path(ctx.out_dir) / "riscv_kmv.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    ctx.console.print(f"plot: {path}")
