"""Seed 004 (issue 7): SVE syscall overhead (fp-pidbench) and SVE traps in a blocking workload,
under the three ``arm64-sve`` policies (legacy, p1, p1+p2).

Time is simulated: the CPU runs at ``FREQ`` Hz (low, so a simulated second — the ``sve_timeout`` —
is crossed quickly), CNTVCT_EL0 counts at the CPU frequency so the guest measures cycles.
"""
from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from rich.table import Table

from emukern.resources import guest_asm_dir

TITLE = "arm64 SVE: syscall overhead after SVE use and the 1 s sve_timeout (seed 004)"
GUEST = guest_asm_dir() / "arm64"
POLICIES = ("legacy", "p1", "p1+p2")
PHASES = ("No SVE", "SVE used once", "SVE used per syscall", "No SVE after SVE")
HZ = 100

SEED = {
    "overhead_after_use_128": 6.0,        # % syscall overhead after SVE use, 128-bit VL
    "p2_gain_after_timeout_128": 4.5,     # % better than baseline after SVE use, once timed out
    "p2_overhead_per_syscall_128": 0.4,   # % overhead with SVE used before every syscall
    "retrap_majority_pct": 50.0,          # most tasks re-trap after >50 % of FPSIMD-only loads
}

COST_KEYS = ("exception_entry", "exception_return", "syscall_dispatch", "syscall_body", "tif_check",
             "sve_access_trap", "sve_sysreg", "schedule", "switch_to", "pipe_op")


def _machine(pol: str, vl: int, freq: int) -> Any:
    from emukern.api import Machine
    return Machine(arch="arm64", sve_vl=vl, policies={"arm64-sve": pol}, freq_hz=freq, hz=HZ,
                   timer_freq=freq)


def fp_pidbench(pol: str, vl: int, iters: int, blocks: int, freq: int) -> dict[str, Any]:
    """One fp_pidbench run: cycles per getpid for every block of every phase."""
    m = _machine(pol, vl, freq)
    m.load(GUEST / "fp_pidbench.S", [str(iters), str(blocks)])
    r = m.run()
    if r.exit_status != 0:
        raise RuntimeError(f"fp_pidbench exited with {r.exit_status} ({pol}, VL {vl})")
    v = struct.unpack(f"<{len(r.stdout) // 8}Q", r.stdout)
    it, nb, guest_vl, frq = v[:4]
    per = [[d / it for d in v[4 + p * nb:4 + (p + 1) * nb]] for p in range(4)]
    st = m.kernel.sve_stats  # type: ignore[attr-defined]
    return {
        "policy": pol, "vl": vl, "guest_vl": guest_vl, "cntfrq": frq, "iters": it, "blocks": nb,
        "per_block": per, "phase_mean": [sum(b) / len(b) for b in per],
        "never": sum(per[0]) / nb, "once_first": per[1][0], "once_last": per[1][-1],
        "per_syscall": sum(per[2]) / nb, "after_first": per[3][0], "after_last": per[3][-1],
        "sve_traps": m.kernel.trap_counts["sve-access"], "flushes": st["flush_syscall"],
        "drops_at_syscall": st["drop_tif_sve_syscall"], "sim_seconds": r.sim_seconds,
        "stub_cycles": dict(m.cpu(0).stub_cycles),
    }


def blocking(pol: str, rounds: int, work: int, sleeps: int, freq: int, vl: int = 128) -> dict[str, Any]:
    """sve_block.S: A = SVE burst + blocking read, B = partner, C = SVE once then only sleeps."""
    m = _machine(pol, vl, freq)
    m.load(GUEST / "sve_block.S", [str(rounds), str(work), str(sleeps)])
    r = m.run()
    if r.exit_status != 0:
        raise RuntimeError(f"sve_block exited with {r.exit_status} ({pol})")
    k = m.kernel
    names = {1: "A (SVE bursts + blocking read)", 2: "B (partner, no SVE)", 3: "C (SVE once, then sleeps)"}
    tasks = {}
    for tid, name in names.items():
        s = k.tasks[tid].thread.stats
        loads = s["load_fpsimd_tif_sve"]
        tasks[name] = {"sve_traps": s["sve_trap"], "fpsimd_loads": s["load_fpsimd"],
                       "fpsimd_loads_tif_sve": loads, "retraps": s["retrap_after_load"],
                       "retrap_pct": 100.0 * s["retrap_after_load"] / loads if loads else 0.0,
                       "syscall_flushes": s["flush_syscall"], "p_flushes": s["flush_p"],
                       "drops": s["drop_tif_sve_load"] + s["drop_tif_sve_syscall"],
                       "sve_saves": s["save_sve"]}
    trap_cycles = sum(t.cycles for t in k.trap_log if t.kind == "sve-access")
    cyc = m.cpu(0).stub_cycles
    return {"policy": pol, "vl": vl, "tasks": tasks, "sim_cycles": r.cycles, "sim_seconds": r.sim_seconds,
            "sve_trap_cycles": trap_cycles, "flush_stub_cycles": cyc["sve_flush_live"] + cyc["sve_flush_p"],
            "stub_cycles": dict(cyc), "cycles_per_round": r.cycles / rounds}


def _pct(a: float, b: float) -> float:
    return 100.0 * (a - b) / b if b else 0.0


def summarise(pid: dict[tuple[str, int], dict[str, Any]], vl: int) -> dict[str, float]:
    leg, p12 = pid[("legacy", vl)], pid[("p1+p2", vl)]
    return {
        "overhead_after_use": _pct(leg["once_first"], leg["never"]),
        "p2_gain_after_timeout": -_pct(p12["after_last"], leg["after_last"]),
        "p2_overhead_per_syscall": _pct(p12["per_syscall"], leg["per_syscall"]),
        "p2_back_to_never": _pct(p12["after_last"], p12["never"]),
    }


def run(ctx: Any) -> dict[str, Any]:
    from emukern.machine.cost import DEFAULT_COSTS
    from emukern.machine.cpu_arm64 import STUBS
    quick = ctx.quick
    freq = 500_000 if quick else 1_000_000
    iters, blocks = (500, 6) if quick else (1000, 6)
    rounds, work, sleeps = (200, 500, 150) if quick else (600, 500, 400)
    vls = (128, 256)
    pid: dict[tuple[str, int], dict[str, Any]] = {}
    blk: dict[str, dict[str, Any]] = {}
    with ctx.progress() as progress:
        task = progress.add_task("arm64_sve", total=len(POLICIES) * (len(vls) + 1))
        for vl in vls:
            for pol in POLICIES:
                progress.update(task, description=f"fp_pidbench {pol} VL {vl}")
                pid[(pol, vl)] = fp_pidbench(pol, vl, iters, blocks, freq)
                progress.advance(task)
        for pol in POLICIES:
            progress.update(task, description=f"blocking scenario {pol}")
            blk[pol] = blocking(pol, rounds, work, sleeps, freq)
            progress.advance(task)

    con = ctx.console
    one_s = freq
    t = Table(title=f"fp_pidbench: cycles per getpid (CPU {freq / 1e6:g} MHz, HZ {HZ}, {iters} calls x "
                    f"{blocks} blocks per phase; 1 simulated s = {one_s:,} cycles)")
    for c in ("policy", "VL", "No SVE", "SVE once: first→last block", "SVE per syscall",
              "After SVE: first→last block", "SVE traps", "TIF_SVE drops at syscall"):
        t.add_column(c, justify="right")
    for vl in vls:
        for pol in POLICIES:
            d = pid[(pol, vl)]
            t.add_row(pol, str(vl), f"{d['never']:.1f}", f"{d['once_first']:.1f} → {d['once_last']:.1f}",
                      f"{d['per_syscall']:.1f}", f"{d['after_first']:.1f} → {d['after_last']:.1f}",
                      str(d["sve_traps"]), str(d["drops_at_syscall"]))
    con.print(t)

    summ = {vl: summarise(pid, vl) for vl in vls}
    s = Table(title="Seed 004 figures beside ours (fp_pidbench)")
    for c in ("figure", "seed (128-bit HW)", "ours VL 128", "ours VL 256"):
        s.add_column(c, justify="right")
    s.add_row("syscall overhead after SVE use (legacy, before the timeout)",
              f"~{SEED['overhead_after_use_128']} %", f"{summ[128]['overhead_after_use']:.1f} %",
              f"{summ[256]['overhead_after_use']:.1f} %")
    s.add_row("p1+p2 vs legacy after SVE use, once the timeout passed (better by)",
              f"~{SEED['p2_gain_after_timeout_128']} %", f"{summ[128]['p2_gain_after_timeout']:.1f} %",
              f"{summ[256]['p2_gain_after_timeout']:.1f} %")
    s.add_row("p1+p2 overhead with SVE used before every syscall",
              f"~{SEED['p2_overhead_per_syscall_128']} %", f"{summ[128]['p2_overhead_per_syscall']:.2f} %",
              f"{summ[256]['p2_overhead_per_syscall']:.2f} %")
    s.add_row("p1+p2 after the timeout vs never used SVE", "~0 %", f"{summ[128]['p2_back_to_never']:.2f} %",
              f"{summ[256]['p2_back_to_never']:.2f} %")
    con.print(s)

    b = Table(title=f"Blocking scenario (1 CPU, VL 128, {rounds} rounds, B works {work} iterations, "
                    f"C sleeps 5 ms x {sleeps}): per task")
    for c in ("policy", "task", "SVE traps", "FPSIMD-only loads (TIF_SVE set)", "re-trapped after",
              "syscall flushes", "P flushes", "TIF_SVE drops"):
        b.add_column(c, justify="right")
    for pol in POLICIES:
        for name, d in blk[pol]["tasks"].items():
            if name.startswith("B"):
                continue
            b.add_row(pol, name, str(d["sve_traps"]), str(d["fpsimd_loads_tif_sve"]),
                      f"{d['retraps']} ({d['retrap_pct']:.0f} %)", str(d["syscall_flushes"]),
                      str(d["p_flushes"]), str(d["drops"]))
    con.print(b)
    c2 = Table(title="Blocking scenario: where the SVE cycles go")
    for c in ("policy", "SVE trap cycles (entry+do_sve_acc+return)", "flush stub cycles",
              "sve_load/save stub cycles", "total sim cycles", "cycles / round"):
        c2.add_column(c, justify="right")
    for pol in POLICIES:
        d = blk[pol]
        sc = d["stub_cycles"]
        c2.add_row(pol, f"{d['sve_trap_cycles']:,}", f"{d['flush_stub_cycles']:,}",
                   f"{sc.get('sve_load_state', 0) + sc.get('sve_save_state', 0):,}",
                   f"{d['sim_cycles']:,}", f"{d['cycles_per_round']:,.0f}")
    con.print(c2)
    a_leg = blk["legacy"]["tasks"]["A (SVE bursts + blocking read)"]
    con.print(f"Seed: under legacy the overwhelming majority of tasks re-trapped after more than "
              f"{SEED['retrap_majority_pct']:.0f} % of FPSIMD-only loads; ours: task A re-traps after "
              f"{a_leg['retrap_pct']:.0f} %, task C (SVE once) after 0 % — the seed's bimodal picture.")

    k = Table(title="Cost-model constants used (cycles; `--cost key=value` to change) and stub sizes")
    k.add_column("key")
    k.add_column("cycles", justify="right")
    k.add_column("stands for")
    for key in COST_KEYS:
        k.add_row(key, str(DEFAULT_COSTS[key][0]), DEFAULT_COSTS[key][1])
    for name, (_, n) in STUBS.items():
        k.add_row(f"stub {name}", str(n), "instructions run on the CPU (incl. the final brk = ret)")
    con.print(k)
    con.print(
        "Where emulator and seed disagree, and why:\n"
        "* The flush costs more here (VL 128: 18 instructions on a ~170-cycle syscall, ~11 %; seed ~6 %):"
        " emukern runs one instruction per cycle, while the seed's core issues the 16 independent"
        " pfalse and wrffr several per cycle; the syscall path itself is a cost-model estimate.\n"
        "* At VL 256 the 32 extra `mov vN.16b, vN.16b` make it ~30 % — the seed's cover letter only"
        " says 'greater' for 256-bit systems.\n"
        "* p1+p2 per-syscall overhead is the modelled extra load+branch (tif_check) plus one re-trap per"
        " simulated second; at IPC 1 the 2 cycles are ~1 % rather than the seed's 0.4 %.\n"
        "* Once the timeout passed, p1+p2 returns exactly to the never-used-SVE cost (the model has no"
        " residual effects such as a larger context or cache footprint).")

    if ctx.out_dir is not None:
        _plot(ctx.out_dir / "arm64_sve.png", pid, blk, vls, freq)
        con.print(f"plot: {ctx.out_dir / 'arm64_sve.png'}")
    return {"freq_hz": freq, "hz": HZ, "seed": SEED,
            "fp_pidbench": {f"{p}/{v}": d for (p, v), d in pid.items()},
            "summary": {str(v): d for v, d in summ.items()}, "blocking": blk}


def _plot(png: Path, pid: dict[tuple[str, int], dict[str, Any]], blk: dict[str, Any], vls: tuple[int, ...],
          freq: int) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(vls) + 1, figsize=(5.2 * (len(vls) + 1), 4.2))
    for ax, vl in zip(axes, vls):
        for pol, style in zip(POLICIES, ("-", "--", ":")):
            d = pid[(pol, vl)]
            ys = [y for ph in d["per_block"] for y in ph]
            xs = list(range(len(ys)))
            ax.step(xs, ys, style, where="mid", label=pol)
        nb = pid[("legacy", vl)]["blocks"]
        for i in range(1, 4):
            ax.axvline(i * nb - 0.5, color="grey", lw=0.5)
        for i, name in enumerate(PHASES):
            ax.text(i * nb + nb / 2 - 0.5, ax.get_ylim()[0], name, ha="center", va="bottom", fontsize=7)
        ax.set_title(f"fp_pidbench, VL {vl} (1 s = {freq:,} cycles)")
        ax.set_xlabel("block (time →)")
        ax.set_ylabel("cycles per getpid")
        ax.legend(fontsize=8)
    ax = axes[-1]
    xs = range(len(POLICIES))
    for off, task, lab in ((-0.2, "A (SVE bursts + blocking read)", "A traps"),
                           (0.2, "C (SVE once, then sleeps)", "C P-flushes")):
        key = "sve_traps" if task.startswith("A") else "p_flushes"
        ax.bar([x + off for x in xs], [blk[p]["tasks"][task][key] for p in POLICIES], 0.4, label=lab)
    ax.set_xticks(list(xs), POLICIES)
    ax.set_yscale("symlog")
    ax.set_title("blocking scenario (VL 128)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
