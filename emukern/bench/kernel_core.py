"""Kernel-core benchmark (issue 4): context switches per wall second, lat_ctx cost per round
trip in simulated cycles, and the wall time of a 64-CPU run of a short loop."""
from __future__ import annotations

import time
from typing import Any

from rich.table import Table

from emukern.resources import guest_asm_dir

# host seconds of a full run on the 2-core development machine, roughly (orders reproduce's pool)
POOL_SECONDS = 2
TITLE = "Kernel core: context switches and SMP scaling"
GUEST = guest_asm_dir()


def _run(arch: str, prog: str, argv: list[str], **opts: Any) -> tuple[float, Any]:
    from emukern.api import Machine
    m = Machine(arch=arch, **opts)
    m.explicit_arch = arch
    sub = "riscv" if arch == "riscv64" else "arm64"
    m.load(GUEST / sub / prog, argv)
    t = time.perf_counter()
    r = m.run()
    return time.perf_counter() - t, r


def run(ctx: Any) -> dict[str, Any]:
    iters = 200 if ctx.quick else 2000
    k = 2000 if ctx.quick else 20000
    out: dict[str, Any] = {}
    t = Table(title="lat_ctx (2 processes, 1 CPU, pipe ping-pong) and a 64-CPU thread run")
    for c in ("arch", "round trips", "context switches", "switches / wall s", "cycles / switch",
              "64-CPU run wall s", "64-CPU sim µs", "status"):
        t.add_column(c, justify="right")
    for arch in ("riscv64", "arm64"):
        wall, r = _run(arch, "lat_ctx.S", [str(iters)])
        switches = sum(x["nvcsw"] + x["nivcsw"] for x in r.tasks)
        wall64, r64 = _run(arch, "threads.S", ["64", str(k), "64"], cpus=64)
        out[arch] = {"lat_ctx_iters": iters, "switches": switches, "switches_per_wall_s": switches / wall,
                     "cycles_per_switch": r.cycles / max(switches, 1), "lat_ctx_status": r.exit_status,
                     "smp64_wall_s": wall64, "smp64_sim_us": r64.sim_seconds * 1e6,
                     "smp64_status": r64.exit_status, "smp64_user_insns": r64.user_insns}
        t.add_row(arch, str(iters), str(switches), f"{switches / wall:,.0f}", f"{r.cycles / max(switches, 1):,.0f}",
                  f"{wall64:.2f}", f"{r64.sim_seconds * 1e6:,.1f}",
                  f"{r.exit_status}/{r64.exit_status}" + ("" if r.exit_status == r64.exit_status == 0 else " FAILED"))
        out[arch]["ok"] = r.exit_status == r64.exit_status == 0
    ctx.console.print(t)
    ctx.console.print("cycles/switch is one half round trip: two syscalls (write+read) and one switch, "
                      "from the cost model (`emukern info costs`: schedule, switch_mm, switch_to, fp_save, "
                      f"fp_restore, pipe_op, ...). 64-CPU run: 64 threads × {k} iterations, one per CPU.")
    return out
