"""Human-readable output with rich: run summaries, info tables."""
from __future__ import annotations

import re
import sys
import textwrap
from typing import Any

from rich.console import Console
from rich.table import Table

from emukern.kernel import errno as E


_NUMERIC = re.compile(r"[-+~x×]?[0-9][0-9,._]*(?:[eE][-+]?[0-9]+)?(?: ?(?:%|×|x|µs|us|ns|s|cycles))?(?: MISSED)?")


LABEL_MIN = 16     # a label column may fold down to this many characters


def _prepare(table: Table, wrap_headers: bool) -> list[int]:
    """Numbers never wrap and keep their width (no_wrap, min_width = the longest); labels fold.
    With ``wrap_headers`` the headers of number columns are wrapped to the numbers' width.
    Returns each column's minimum width."""
    mins = []
    for col in table.columns:
        cells = [c for c in col._cells if isinstance(c, str) and c]
        header = str(col.header).replace("\n", " ")
        words = max((len(w) for w in header.split()), default=1)
        col.overflow = "fold"
        if cells and all(_NUMERIC.fullmatch(c.strip()) for c in cells):
            numbers = max(len(c) for c in cells)
            width = max(numbers, words) if wrap_headers else max(numbers, len(header))
            if isinstance(col.header, str):
                col.header = "\n".join(textwrap.wrap(header, width)) if wrap_headers else header
            col.no_wrap = True
            col.min_width = width
        else:
            longest = max([len(w) for c in cells for w in c.split()] + [words], default=1)
            col.min_width = min(LABEL_MIN, longest)
        mins.append(col.min_width)
    return mins


def fit(table: Table, width: int) -> list[Table]:
    """Never cut a number: headers of number columns wrap if the table is too wide; a table that
    still cannot fit ``width`` is printed as several tables, each repeating the first column."""
    per_col = 2 * (table.padding[1] if len(table.padding) > 1 else 1) + (1 if table.box else 0)

    def total(mins: list[int]) -> int:
        return sum(m + per_col for m in mins) + (1 if table.box else 0)
    mins = _prepare(table, wrap_headers=False)
    if total(mins) <= width:
        return [table]
    mins = _prepare(table, wrap_headers=True)
    if total(mins) <= width or len(table.columns) <= 2:
        return [table]
    import copy
    first = mins[0] + per_col + (1 if table.box else 0)
    groups: list[list[int]] = [[]]
    used = first
    for i in range(1, len(mins)):
        need = mins[i] + per_col
        if groups[-1] and used + need > width:
            groups.append([])
            used = first
        groups[-1].append(i)
        used += need
    out = []
    for n, g in enumerate(groups, 1):
        t = copy.copy(table)
        t.columns = [copy.copy(table.columns[0])] + [copy.copy(table.columns[i]) for i in g]
        if table.title:
            t.title = f"{table.title} ({n}/{len(groups)})"
        out.append(t)
    return out


class FitConsole(Console):
    """A Console that prints every table through :func:`fit` (labels fold, numbers stay whole)."""

    def print(self, *objects: Any, **kwargs: Any) -> None:  # type: ignore[override]
        parts: list[Any] = []
        for o in objects:
            parts.extend(fit(o, self.width) if isinstance(o, Table) else [o])
        super().print(*parts, **kwargs)


def stderr_console() -> Console:
    return FitConsole(file=sys.stderr, highlight=False, soft_wrap=True)


def print_trap_trace(kernel: Any, console: Console | None = None) -> None:
    """`--trace traps`: every trap the kernel took (the most recent ones), one line each."""
    con = console or stderr_console()
    for rec in kernel.trap_log:
        con.print(f"[dim]#{rec.seq:<6}[/] cpu{rec.cpu} tid{rec.tid} t={rec.time:<10} {rec.kind:<10} "
                  f"pc={rec.pc:#x} {rec.syndrome}  [bold]{rec.handler}[/]: {rec.decision} "
                  f"[dim]({rec.cycles} cycles; {'|'.join(rec.tif) or 'no TIF flags'})[/]", markup=True)
    if len(kernel.trap_log) == kernel.trap_log.maxlen:
        con.print(f"[dim](only the last {kernel.trap_log.maxlen} traps are kept)[/]")


def print_run_summary(r: Any, kernel: Any = None, trace: str | None = None, console: Console | None = None) -> None:
    con = console or stderr_console()
    if trace == "traps" and kernel is not None:
        print_trap_trace(kernel, con)
    if r.fault:
        f = r.fault
        where = f" at pc {f['pc']:#x}: {f.get('disasm', '?')}" if "pc" in f else ""
        addr = f" (address {f['addr']:#x})" if "addr" in f else ""
        from rich.markup import escape          # "ldr x0, [x1]" is not markup
        con.print(f"[bold red]{f['signame']}[/]" + escape(f"{where}{addr} — {f.get('why', '')}"))
    if r.stop_reason in ("budget", "deadlock") or (r.stop_reason == "exited" and r.message):
        con.print(f"[bold yellow]stopped:[/] {r.message}")
    status = (f"exit {r.exit_code}" if r.exit_code is not None else
              f"killed by {E.SIGNAL_NAMES.get(r.signal or 0, r.signal)}"
              + (" (core dumped)" if r.message.endswith("(core dumped)") else "") if r.signal else r.stop_reason)
    t = Table(title=f"emukern: {status} (status {r.exit_status})", show_header=False, box=None)
    t.add_column(style="bold")
    t.add_column()
    t.add_row("user instructions", f"{r.user_insns:,}")
    t.add_row("kernel cost", f"{r.kernel_cycles:,} cycles")
    t.add_row("cycles (elapsed)", f"{r.cycles:,}")
    t.add_row("simulated time", f"{r.sim_seconds * 1e6:,.3f} µs")
    t.add_row("traps", ", ".join(f"{k}={v}" for k, v in r.traps.items()) or "none")
    if r.syscalls:
        t.add_row("syscalls", ", ".join(f"{k}={v}" for k, v in r.syscalls.items()))
    if r.unknown_syscalls:
        t.add_row("unknown syscalls (-ENOSYS)", ", ".join(f"{k}×{v}" for k, v in r.unknown_syscalls.items()))
    cs = sum(x["nvcsw"] + x["nivcsw"] for x in r.tasks)
    if len(r.tasks) > 1 or cs:
        t.add_row("tasks", f"{len(r.tasks)} ({cs} context switches)")
    if r.warnings:
        t.add_row("[red]kernel WARN_ON[/]", ", ".join(f"{k}×{v}" for k, v in r.warnings.items()))
    if r.locks:
        t.add_row("locks", "; ".join(f"{lk['lock']}: {lk['acquisitions']} acq, {lk['contended']} contended, "
                                     f"{lk['spin_cycles']:,} spin cycles" for lk in r.locks))
    con.print(t)
    if len(r.tasks) > 1 or len(r.cpus) > 1:
        _print_accounting(r, con)
    t = Table(show_header=False, box=None)
    t.add_column(style="bold")
    t.add_column()
    t.add_row("machine", ", ".join(f"{k}={v}" for k, v in r.config.items()))
    if r.policies:
        t.add_row("policies", ", ".join(f"{k}={v}" for k, v in r.policies.items()))
    for p in getattr(r, "plugins", []):
        if p["kind"] == "variant":
            t.add_row("plug-in", f"{p['policy']}={p['value']} from {p['origin']} (base {p['base']}; "
                      f"replaces {', '.join(p['overrides']) or 'nothing'})")
        else:
            t.add_row("plug-in", f"{p['function']} overridden by {p['origin']}")
    if r.sysctls:
        t.add_row("sysctls", ", ".join(f"{k}={v}" for k, v in r.sysctls.items()))
    con.print(t)


def _print_accounting(r: Any, con: Console) -> None:
    t = Table(title="per task", box=None)
    for c in ("tid", "pid", "comm", "cpu", "user cycles", "system cycles", "vol. switches", "invol.", "syscalls", "state"):
        t.add_column(c, justify="right")
    for x in r.tasks[:32]:
        t.add_row(str(x["tid"]), str(x["pid"]), x["comm"], str(x["cpu"]), f"{x['utime']:,}", f"{x['stime']:,}",
                  str(x["nvcsw"]), str(x["nivcsw"]), str(x["syscalls"]), x["state"])
    if len(r.tasks) > 32:
        t.add_row("…", f"{len(r.tasks) - 32} more", "", "", "", "", "", "", "", "")
    con.print(t)
    if len(r.cpus) > 1:
        t = Table(title="per CPU", box=None)
        for c in ("cpu", "cycles", "user insns", "system cycles", "idle cycles", "switches", "ticks"):
            t.add_column(c, justify="right")
        for c in r.cpus[:64]:
            t.add_row(str(c["cpu"]), f"{c['cycles']:,}", f"{c['user_insns']:,}", f"{c['sys_cycles']:,}",
                      f"{c['idle_cycles']:,}", str(c["switches"]), str(c["ticks"]))
        con.print(t)


def sysctl_rows() -> list[tuple[str, str, str, str]]:
    """(key, arch, default, accepted values) of every sysctl a default machine of each arch
    registers: read from booted kernels, so the list is what --sysctl really accepts."""
    from emukern.config import MachineConfig
    from emukern.kernel.kernel import Kernel
    rows = []
    for arch in ("riscv64", "arm64"):
        k = Kernel(MachineConfig(arch=arch))
        for key in sorted(k.sysctl.entries):
            e = k.sysctl.entries[key]
            default = str(e.value)
            if key == "abi.riscv_v_vstate_discard":
                default += " (CONFIG_RISCV_ISA_V_VSTATE_DISCARD=n)"
            values = "0|1" if e.kind == "bool" else f"{e.minimum}..{e.maximum}"
            rows.append((key, arch + (" (with V)" if arch == "riscv64" else ""), default, values))
    return rows


def print_info(what: str) -> None:
    con = FitConsole(highlight=False, width=None if sys.stdout.isatty() else 120)
    if what in ("policies", "all"):
        from emukern.kernel import plugins
        from emukern.kernel.policies import SWITCHES
        t = Table(title="policies (--policy NAME=VALUE; the debugger's `policy NAME VALUE` switches at run time)")
        for c in ("name", "values", "default", "Linux change (subject, author, date, message id)", "what changes"):
            t.add_column(c, overflow="fold")
        for s in SWITCHES.values():
            t.add_row(s.name, "|".join(s.values), s.default, s.patch.cite, s.what + f" (read in {s.decided})")
        for v in plugins.variants():
            t.add_row(v.switch, v.value, "", f"plug-in from {v.origin} (base {v.base}"
                      + ("" if v.runtime else ", boot-time only") + ")",
                      v.what + (f" (replaces {', '.join(sorted(v.overrides))})" if v.overrides else ""))
        con.print(t)
        ov = plugins.overrides()
        if ov:
            t = Table(title="kernel function overrides (plug-ins)")
            for c in ("function", "from", "what"):
                t.add_column(c, overflow="fold")
            for o in ov:
                t.add_row(o.name, o.origin, o.what)
            con.print(t)
    if what in ("costs", "all"):
        from emukern.kernel.cost import CostTable
        t = Table(title="cost model (--cost KEY=CYCLES)")
        for c in ("key", "cycles", "models"):
            t.add_column(c)
        for k, v, d in CostTable().describe():
            t.add_row(k, str(v), d)
        con.print(t)
    if what in ("sysctls", "all"):
        t = Table(title="sysctls (--sysctl KEY=VALUE, /proc/sys/...)")
        for c in ("key", "arch", "default", "values"):
            t.add_column(c)
        for key, arch, default, values in sysctl_rows():
            t.add_row(key, arch, default, values)
        con.print(t)
