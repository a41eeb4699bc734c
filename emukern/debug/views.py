"""What the debugger shows: `info NAME` views (a registry other code can extend), the trap view
and the stop messages.

A view is ``fn(dbg, args) -> list[str]``; lines may use rich markup (escape data with
:func:`esc`).  Add one with::

    from emukern.debug.views import register_view
    register_view("sve", lambda dbg, args: [f"VL={dbg.cpu.vl}"], "SVE vector length")

Architecture state is read defensively (``getattr``): the arch modules are still growing.
"""
from __future__ import annotations

from unicorn import UcError

from dataclasses import dataclass
from typing import Any, Callable

from rich.markup import escape as esc

from emukern.debug.conditions import EvalContext, decision_of, lookup
from emukern.debug.errors import DebugError
from emukern.errors import MemoryFault
from emukern.debug.regs import display_name, main_registers, read_register
from emukern.machine.trap import TrapKind
from emukern.kernel.signal import delivery as signal_delivery
from emukern.kernel.syscalls import table as syscalls_table


@dataclass
class View:
    name: str
    fn: Callable[[Any, list[str]], list[str]]
    help: str
    aliases: tuple[str, ...] = ()


VIEWS: dict[str, View] = {}


def register_view(name: str, fn: Callable[[Any, list[str]], list[str]], help: str = "",
                  aliases: tuple[str, ...] = ()) -> None:
    """Add (or replace) `info NAME`."""
    VIEWS[name] = View(name, fn, help, aliases)


def find_view(name: str) -> View:
    if name in VIEWS:
        return VIEWS[name]
    for v in VIEWS.values():
        if name in v.aliases:
            return v
    cands = [v.name for v in VIEWS.values() if v.name.startswith(name)]
    if len(cands) == 1:
        return VIEWS[cands[0]]
    raise DebugError(f"no view {name!r}" + (f" (ambiguous: {', '.join(cands)})" if cands else ""),
                     hint="info views: " + ", ".join(sorted(VIEWS)))


# ---- helpers --------------------------------------------------------------------------------------
def disasm_at(dbg: Any, addr: int, mm: Any = None, size: int = 4) -> str:
    from emukern.disasm import disasm_one
    mm = mm if mm is not None else _mm(dbg)
    if mm is None:
        return "<no memory>"
    try:
        code = mm.read(addr, 4, "x")
    except MemoryFault:
        try:
            code = mm.read(addr, 2, "x")
        except MemoryFault:
            return "<unreadable>"
    return disasm_one(dbg.arch, code, addr)


def _mm(dbg: Any) -> Any:
    try:
        return dbg.mm()
    except DebugError:              # no task and no program: nothing to read
        return None


def where(dbg: Any, addr: int) -> str:
    s = dbg.symbolize(addr)
    return f"{addr:#x}" + (f" <{s}>" if s else "")


def location_line(dbg: Any, cpu: Any = None) -> str:
    cpu = cpu if cpu is not None else dbg.cpu
    pc = cpu.get_pc()
    return f"[bold]=>[/] {esc(where(dbg, pc))}:  [cyan]{esc(disasm_at(dbg, pc))}[/]"


def predict_handler(dbg: Any, cpu: Any, trap: Any) -> str:
    """The kernel function that is about to handle ``trap`` (as the arch code dispatches it)."""
    if trap.kind is TrapKind.SYSCALL:
        try:
            nr = dbg.k.arch.syscall_nr(cpu)
            return f"{syscalls_table.syscall_name(dbg.k, nr)} (syscall {nr})"
        except UcError:                 # the CPU's registers are not readable now
            return "do_syscall"
    if trap.kind is TrapKind.TIMER:
        return "scheduler_tick"
    # the arch's own dispatch table (ArchBase.TRAP_HANDLERS / trap_handler_path), not a copy
    return dbg.k.arch.trap_handler_path(cpu, trap, dbg.classify(cpu, trap)) or "?"


def info_decision(info: Any) -> str:
    """decision_of() plus, for an EL0 MRS the kernel emulated, the register read and the value
    it put in Rt (the point of the trap: what the program saw)."""
    text = decision_of(info.trap) or "-"
    res = getattr(info, "mrs_result", None)
    if res is not None:
        import re
        rt, value = res
        m = re.match(r"mrs\s+\w+,\s*(\S+)", info.disasm or "")
        reg = m.group(1).upper() if m else "the system register"
        text += f"; {reg} read as {value:#x} into x{rt}" if rt != 31 else f"; {reg} read (into xzr)"
    return text


def _fmt_val(v: Any) -> str:
    if isinstance(v, bool):
        return "set" if v else "clear"
    return str(v)


def trap_lines(dbg: Any, info: Any) -> list[str]:
    t = info.trap
    pending = not info.done
    title = "[bold yellow]trap[/]" if pending else "[bold green]trap[/]"
    out = [f"{title} #{info.seq} [bold]{esc(t.kind.value)}[/] on cpu {info.cpu}, tid {info.tid}"
           + ("  [yellow](stopped before the handler)[/]" if pending else "")]
    out.append(f"  pc        {esc(where(dbg, t.pc))}:  [cyan]{esc(info.disasm)}[/]")
    if t.insn is not None:
        out.append(f"  insn      {t.insn:#010x}" if t.insn_size == 4 else f"  insn      {t.insn:#06x}")
    out.append(f"  syndrome  {esc(t.syndrome())}" + _syndrome_detail(t))
    if t.addr is not None:
        out.append(f"  address   {t.addr:#x} ({esc(t.access or '?')})")
    if t.detail:
        out.append(f"  detail    {esc(t.detail)}")
    if pending:
        out.append(f"  handler   {esc(info.predicted)}  [dim](about to run; `finish` runs it, `step` too)[/]")
    else:
        out.append(f"  handler   [bold]{esc(t.handler or info.predicted)}[/]")
        out.append(f"  decision  {esc(info_decision(info))}")
        out.append(f"  cycles    {t.cycles}")
    before, after = info.before, info.after
    if before:
        if after:
            parts = []
            keys = [k for k in before if k in after] + [k for k in after if k not in before]
            for k in keys:
                b, a = before.get(k), after.get(k)
                parts.append(f"{k}={_fmt_val(b)}" if b == a else f"[bold]{k}: {_fmt_val(b)} -> {_fmt_val(a)}[/]")
            out.append("  state     " + ", ".join(parts))
        else:
            out.append("  state     " + ", ".join(f"{k}={_fmt_val(v)}" for k, v in before.items()))
    return out


def _syndrome_detail(t: Any) -> str:
    if t.arch == "arm64" and t.esr is not None:
        ec = t.ec
        names = {0x00: "unknown/undefined", 0x15: "SVC64", 0x18: "MSR/MRS/SYS (trapped sysreg)",
                 0x19: "SVE access", 0x20: "instruction abort (lower EL)", 0x24: "data abort (lower EL)",
                 0x3C: "BRK64"}
        return f"  [dim]EC {ec:#04x}: {names.get(ec, '?')}[/]"
    if t.arch == "riscv64" and t.cause is not None:
        names = {2: "illegal instruction", 3: "breakpoint", 8: "environment call from U-mode",
                 12: "instruction page fault", 13: "load page fault", 15: "store/AMO page fault",
                 (1 << 63) | 5: "supervisor timer interrupt"}
        return f"  [dim]{names.get(t.cause, '?')}[/]"
    return ""


def handled_line(dbg: Any, info: Any) -> str:
    t = info.trap
    return (f"  [green]handled[/] {esc(t.kind.value)} at {esc(where(dbg, t.pc))}: "
            f"{esc(t.handler or info.predicted)} -> {esc(info_decision(info))} ({t.cycles} cycles)")


def stop_lines(dbg: Any, ev: Any) -> list[str]:
    out: list[str] = []
    r = ev.reason
    if r in ("step", "finish", "breakpoint", "until", "trap-exit", "condition", "interrupted", "signal"):
        for info in ev.handled:
            if r in ("trap-exit", "condition") and info is ev.info:
                continue
            out.append(handled_line(dbg, info))
    if r == "exited":
        for info in ev.handled:
            out.append(handled_line(dbg, info))
        out.append(f"[bold]\\[{esc(ev.message)}][/]")
        return out
    if r == "breakpoint" and ev.bp is not None:
        out.append(f"[bold red]Breakpoint {ev.bp.num}[/], {esc(where(dbg, ev.pc))}")
    elif r == "until":
        out.append(f"Reached {esc(where(dbg, ev.pc))}")
    elif r == "watchpoint" and ev.bp is not None:
        what = "wrote" if ev.bp.hit_access == "w" else "read"
        out.append(f"[bold red]Watchpoint {ev.bp.num}[/] ({esc(ev.bp.describe())}): the instruction at "
                   f"{esc(where(dbg, ev.pc))} {what} {ev.bp.hit_addr:#x} [dim](it re-executes on resume"
                   + ("; the write has already reached memory)[/]" if what == "wrote" else ")[/]"))
    elif r == "trap-entry":
        if ev.bp is not None:
            out.append(f"[bold red]Trap breakpoint {ev.bp.num}[/] ({esc(ev.bp.describe())})")
        else:
            out.append("[yellow]Stopped at a trap[/] (the handler has not run)")
        if ev.info is not None:
            out += trap_lines(dbg, ev.info)
    elif r == "trap-exit":
        out.append(f"[bold red]Trap breakpoint {ev.bp.num}[/] ({esc(ev.bp.describe())})" if ev.bp else "After a trap")
        if ev.info is not None:
            out += trap_lines(dbg, ev.info)
    elif r == "condition":
        out.append(f"[bold red]Breakpoint {ev.bp.num}[/] ({esc(ev.bp.describe())}) is true")
        if ev.info is not None:
            out += trap_lines(dbg, ev.info)
    elif r == "finish":
        if ev.info is not None and ev.info.done:
            out += trap_lines(dbg, ev.info)
        else:
            out.append("Handler finished.")
    elif r == "interrupted":
        out.append("[yellow]Interrupted.[/]")
    elif r == "error":
        out.append(f"[bold red]Error:[/] {esc(ev.message)}")
    elif r == "signal":
        out.append(f"[bold red]Signal breakpoint {ev.bp.num}[/]: {esc(ev.message)}" if ev.bp else esc(ev.message))
    if not dbg.finished and dbg.task() is not None:
        out.append(location_line(dbg))
    elif not dbg.finished:
        out.append(f"cpu {dbg.cur} is idle")
    return out


# ---- the views ------------------------------------------------------------------------------------
def view_regs(dbg: Any, args: list[str]) -> list[str]:
    cpu = dbg.cpu
    names = args or main_registers(cpu)
    out = []
    for n in names:
        v = read_register(cpu, n)
        extra = ""
        if n.lower() == "pc":
            s = dbg.symbolize(v)
            extra = f" <{s}>" if s else ""
        elif n.lower() in ("cpsr", "nzcv"):
            extra = " [" + " ".join(f for f, b in (("N", 31), ("Z", 30), ("C", 29), ("V", 28)) if v >> b & 1) + "]"
        dn = display_name(cpu, n.lower())
        out.append(f"{esc(dn):<12} {v:#018x}  {v if v < (1 << 63) else v - (1 << 64)}{esc(extra)}")
    return out


def view_fregs(dbg: Any, args: list[str]) -> list[str]:
    cpu = dbg.cpu
    if dbg.arch == "riscv64":
        names = args or [f"f{i}" for i in range(32)] + ["fcsr"]
        return [f"{n:<6} {read_register(cpu, n):#018x}" for n in names]
    names = args or [f"v{i}" for i in range(32)] + ["fpsr", "fpcr"]
    return [f"{n:<6} {read_register(cpu, n):#034x}" for n in names]


def view_vregs(dbg: Any, args: list[str]) -> list[str]:
    cpu = dbg.cpu
    rvv = getattr(cpu, "rvv", None)
    if dbg.arch != "riscv64":
        raise DebugError("info vregs is for RISC-V vector registers", hint="on arm64 use `info zregs` / `info pregs`")
    if rvv is None:
        raise DebugError("this hart has no V extension (--no-v)")
    from emukern.machine.cpu_riscv import VS_NAMES
    sew, named = _element_args(args, "v", 32, "info vregs [e8|e16|e32|e64] [vN ...]")
    regs = named or list(range(32))
    if sew is None:
        sew = vtype_sew(rvv)
    vs = getattr(cpu, "vs", None)
    out = [f"VLEN={rvv.vlen} vl={rvv.vl} vtype={rvv.vtype:#x}{' (vill)' if rvv.vill else ''} "
           f"vstart={rvv.vstart} VS={VS_NAMES.get(vs, vs)}  elements as e{sew}"]
    if vs == 0:
        out.append("[dim](VS=Off: the registers are not live for this task)[/]")
    for i in regs:
        try:
            els = rvv.elements(i, sew)
        except ValueError as exc:       # a register or element size the vector unit refuses
            raise DebugError(str(exc)) from None
        w = sew // 4
        out.append(f"v{i:<3} " + " ".join(f"{e:0{w}x}" for e in els))
    return out


def vtype_sew(rvv: Any) -> int:
    """The element width vtype selects (vsew, bits 5:3); e64 when vtype is invalid (vill)."""
    if getattr(rvv, "vill", False):
        return 64
    vt = getattr(rvv, "_vt", None)
    if getattr(vt, "sew", None):
        return int(vt.sew)
    return 8 << ((int(rvv.vtype) >> 3) & 3)


def _element_args(args: list[str], prefix: str, count: int, usage: str,
                  extra: tuple[str, ...] = ()) -> tuple[int | None, list[Any]]:
    """`[e8|e16|e32|e64|8|...] [REG ...]`: the element width (None if not given) and the
    registers named (numbers, or the names in ``extra`` such as ffr), in the order given."""
    sew: int | None = None
    regs: list[Any] = []
    for a in args:
        low = a.lower()
        w = low[1:] if low.startswith("e") else low
        if w in ("8", "16", "32", "64"):
            sew = int(w)
        elif low.startswith(prefix) and low[len(prefix):].isdigit() and int(low[len(prefix):]) < count:
            regs.append(int(low[len(prefix):]))
        elif low in extra:
            regs.append(low)
        else:
            raise DebugError(f"bad argument {a!r}", hint=usage)
    return sew, regs


def view_zregs(dbg: Any, args: list[str], what: str = "z") -> list[str]:
    cpu = dbg.cpu
    if dbg.arch != "arm64":
        raise DebugError("info zregs/pregs are for arm64 SVE", hint="on RISC-V use `info vregs`")
    from emukern.debug.regs import has_sve, read_sve
    reader = (lambda: read_sve(cpu)) if has_sve(cpu) else None
    out = [f"SVE VL={getattr(cpu, 'vl', '?')} bits, EL0 access {'enabled' if getattr(cpu, 'sve_el0', False) else 'trapped'}"]
    if callable(reader):
        if what == "z":
            sew, regs = _element_args(args, "z", 32, "info zregs [e8|e16|e32|e64] [zN ...]")
        else:
            sew, regs = _element_args(args, "p", 16, "info pregs [e8|e16|e32|e64] [pN ... ffr]", ("ffr",))
        sew = sew or (64 if what == "z" else 8)
        try:
            st = reader()
        except Exception as exc:  # noqa: BLE001 - reported to the user as the command's error
            raise DebugError(f"reading SVE state failed: {exc}") from None
        if what == "z":
            out[0] += f"  elements as e{sew}, element 0 first"
            for i in regs or range(32):
                data = bytes(st["z"][i])
                eb = sew // 8
                els = [int.from_bytes(data[j:j + eb], "little") for j in range(0, len(data), eb)]
                out.append(f"z{i:<3} " + " ".join(f"{e:0{2 * eb}x}" for e in els))
            return out
        # a predicate has one bit per vector byte: element k of width e is active when bit k*e/8 is set
        out[0] += f"  predicates as .{ {8: 'b', 16: 'h', 32: 's', 64: 'd'}[sew]} elements (1 = active), element 0 first"
        for r in regs or [*range(16), "ffr"]:
            data = bytes(st["ffr"] if r == "ffr" else st["p"][r])
            bits = int.from_bytes(data, "little")
            step = sew // 8
            flags = "".join("1" if bits >> k & 1 else "." for k in range(0, 8 * len(data), step))
            name = "ffr" if r == "ffr" else f"p{r}"
            active = flags.count("1")
            out.append(f"{name:<4} {flags}  ({active} of {len(flags)} active; raw {bits:#0{2 + 2 * len(data)}x})")
        return out
    out.append("[yellow]this CPU has no SVE: Z/P registers cannot be read;[/]")
    if what == "p":
        out.append("predicate registers cannot be shown")
        return out
    out.append("showing V0-V31 (the low 128 bits of Z0-Z31):")
    fp = cpu.save_fp()
    for i, v in enumerate(fp["v"]):
        out.append(f"v{i:<3} {v:#034x}")
    return out


def view_task(dbg: Any, args: list[str]) -> list[str]:
    if args:
        try:
            tid = int(args[0], 0)
        except ValueError:
            raise DebugError(f"bad task id {args[0]!r}") from None
        task = dbg.k.tasks.get(tid)
        if task is None:
            raise DebugError(f"no task {tid}", hint="see `info tasks`")
    else:
        task = dbg.task()
        if task is None:
            raise DebugError(f"no task is running on cpu {dbg.cur}", hint="see `info tasks`")
    out = [f"task {task.tid} (pid {task.tgid}) {esc(task.comm)}: {task.state.value}"
           + (f" ({esc(task.wait_reason)})" if task.state.value == "blocked" else "") + f", cpu {task.cpu}"]
    out.append(f"  utime {task.utime}  stime {task.stime}  syscalls {task.syscalls}  "
               f"switches {task.nvcsw} voluntary / {task.nivcsw} involuntary")
    if task.affinity:
        out.append(f"  affinity {sorted(task.affinity)}")
    if task.pending is not None:
        out.append(f"  pending syscall {syscalls_table.syscall_name(dbg.k, task.pending[0])}")
    out.append(_tif_line(dbg.k, task))
    th = task.thread
    if th is not None:
        out += ["  thread:"] + ["    " + esc(line) for line in _thread_state(dbg, task)]
    return out


def _thread_state(dbg: Any, task: Any) -> list[str]:
    th = task.thread
    out = []
    if dbg.arch == "riscv64":
        try:
            from emukern.kernel.arch.riscv.vector import vstate_view
            cpu = dbg.k.cpus[task.cpu] if dbg.k.percpu[task.cpu].curr is task else None
            v = vstate_view(task, cpu)
            out.append("vector: " + ", ".join(f"{k}={v}" for k, v in v.items()))
            last = getattr(th.v, "last_decision", None)
            if last:
                out.append(f"last vector decision: {last}")
        except Exception as exc:  # noqa: BLE001 - a status view: it says what failed and shows the rest
            out.append(f"vector state unavailable ({exc})")
        out.append(f"fp context: {'saved' if getattr(th, 'fp', None) is not None else 'live/none'}")
        return out
    fields = getattr(th, "__dataclass_fields__", None)
    names = list(fields) if fields else [n for n in vars(th) if not n.startswith("_")]
    for n in names:
        if n == "task":
            continue                    # (the back-reference to the flags word's task)
        v = getattr(th, n, None)
        if isinstance(v, dict) and "v" in v:
            v = f"<saved fpsimd: {len(v['v'])} V regs>"
        elif isinstance(v, (bytes, bytearray)):
            v = f"<{len(v)} bytes>"
        out.append(f"{n}: {v}")
    return out


def view_tasks(dbg: Any, args: list[str]) -> list[str]:
    out = [f"{'tid':>5} {'pid':>5} {'state':<9} {'cpu':>3}  {'comm':<16} where"]
    for t in dbg.k.tasks.values():
        running = any(p.curr is t for p in dbg.k.percpu)
        mark = "*" if dbg.task() is t else " "
        where_ = ""
        if running:
            where_ = "running at " + where(dbg, dbg.k.cpus[t.cpu].get_pc())
        elif t.ctx and "pc" in t.ctx:
            where_ = "saved pc " + where(dbg, t.ctx["pc"])
        st = t.state.value + (f" ({t.wait_reason})" if t.state.value == "blocked" else "")
        out.append(f"{mark}{t.tid:>4} {t.tgid:>5} {esc(st):<9} {t.cpu:>3}  {esc(t.comm):<16} {esc(where_)}")
    return out


def view_cpu(dbg: Any, args: list[str]) -> list[str]:
    out = []
    idxs = [int(args[0])] if args else range(len(dbg.k.cpus))
    for i in idxs:
        if not 0 <= i < len(dbg.k.cpus):
            raise DebugError(f"no CPU {i}")
        c, p = dbg.k.cpus[i], dbg.k.percpu[i]
        cur = "*" if i == dbg.cur else " "
        task = f"task {p.curr.tid}" if p.curr is not None else "idle"
        out.append(f"{cur}cpu {i}: {task}, now {c.now} cycles (jiffies {dbg.k.clock.jiffies(c.now)}), "
                   f"insns {c.insns} (user {c.user_insns}), sys {c.sys_cycles}, idle {c.idle_cycles}")
        out.append(f"   run queue {[t.tid for t in p.rq]}, ticks {p.ticks}, next tick {p.next_tick}, "
                   f"switches {p.nr_switches}, need_resched {p.need_resched}, counter {c.counter.kind}")
        if dbg.arch == "riscv64":
            from emukern.machine.cpu_riscv import VS_NAMES
            vs = getattr(c, "vs", None)
            out.append(f"   sstatus.VS={VS_NAMES.get(vs, vs)}, vector insns {getattr(c, 'vector_insns', 0)}, "
                       f"VLEN {getattr(c, 'vlen', '?')}")
        else:
            out.append(f"   SVE VL {getattr(c, 'vl', '?')}, CPACR_EL1.ZEN EL0 "
                       f"{'enabled' if getattr(c, 'sve_el0', False) else 'trapped'}, FEAT_IDST {getattr(c, 'idst', '?')}")
    return out


def _tif_line(k: Any, task: Any) -> str:
    """The task's thread flags word, every flag the arch's model uses, by its Linux name."""
    from emukern.kernel.thread_info import ARCH_FLAGS, TIF_FLAGS
    if task is None:
        return "  TIF flags -"
    names = ARCH_FLAGS.get(k.config.arch, ())
    return f"  TIF flags {task.flags:#x}: " + ", ".join(
        f"{n}={'set' if task.flags & TIF_FLAGS[n] else 'clear'}" for n in names)


def view_kernel(dbg: Any, args: list[str]) -> list[str]:
    k = dbg.k
    cpu = dbg.cpu
    task = dbg.task()
    now = cpu.now
    out = [f"[bold]kernel[/] arch {k.config.arch}, {len(k.cpus)} cpu(s), jiffies {k.clock.jiffies(now)} "
           f"(cpu {cpu.index} at {now} cycles, HZ {k.config.hz})"]
    if k.deferred_trap is not None:
        out.append(f"  in a trap: {k.deferred_trap[1].kind.value} on cpu {k.deferred_trap[0].index} "
                   "(handler not yet run)")
    if dbg.arch == "riscv64":
        from emukern.machine.cpu_riscv import VS_NAMES
        vs = getattr(cpu, "vs", None)
        out.append(f"  sstatus.VS {VS_NAMES.get(vs, vs)}")
        out.append(_tif_line(k, task))
        if task is not None and getattr(task.thread, "v", None) is not None:
            st = task.thread.v
            try:
                from emukern.kernel.arch.riscv.vector import vstate_view
                v = vstate_view(task, cpu)
                out.append("  vstate " + esc(", ".join(f"{a}={b}" for a, b in v.items())))
            except Exception as exc:  # noqa: BLE001 - a status view: it says what failed and shows the rest
                out.append(f"  vstate unavailable ({exc})")
            last = getattr(st, "last_decision", None)
            if last:
                out.append(f"  last vector decision: {esc(last)}")
    else:
        out.append(_tif_line(k, task))
        th = getattr(task, "thread", None)
        ctx = EvalContext(k, cpu, task, None)
        to = lookup("sve_timeout", ctx)
        jf = k.clock.jiffies(now)
        if to is not None:
            rel = "passed" if jf > to else "not yet"
            out.append(f"  sve_timeout {to} vs jiffies {jf} ({rel})")
        else:
            out.append(f"  sve_timeout (not modelled yet), jiffies {jf}")
        out.append(f"  task VL {getattr(th, 'vl', '?')}, cpu VL {getattr(cpu, 'vl', '?')}, "
                   f"EL0 SVE {'enabled' if getattr(cpu, 'sve_el0', False) else 'trapped'}")
        owner = _live_state_owner(k, cpu)
        if owner is not None:
            out.append(f"  live FP/SVE state owner on cpu {cpu.index}: {esc(str(owner))}")
    if k.locks:
        out.append("  locks:")
        for lk in k.locks.values():
            s = lk.stats()
            out.append("    " + esc(", ".join(f"{a}={b}" for a, b in s.items())))
    else:
        out.append("  locks: none taken")
    if k.sysctl.entries:
        out.append("  sysctls: " + ", ".join(f"{n}={e.value}" for n, e in sorted(k.sysctl.entries.items())))
    out.append("  policies: " + ", ".join(f"{n}={v}" for n, v in k.policies.for_arch(k.config.arch).items()))
    out.append("  traps: " + (", ".join(f"{a}={b}" for a, b in sorted(k.trap_counts.items())) or "none"))
    return out


def _live_state_owner(k: Any, cpu: Any) -> Any:
    """Linux's fpsimd_last_state / wrong_task: who owns the live registers (when modelled)."""
    for holder in (cpu, getattr(k, "percpu", [None] * (cpu.index + 1))[cpu.index]):
        for name in ("fpsimd_last_state", "last_state", "fpsimd_owner", "live_owner"):
            v = getattr(holder, name, None)
            if v is not None:
                tid = getattr(v, "tid", None)
                return f"task {tid}" if tid is not None else v
    return None


def view_breakpoints(dbg: Any, args: list[str]) -> list[str]:
    if not dbg.breakpoints:
        return ["No breakpoints."]
    out = [f"{'Num':<4} {'Type':<11} {'Enb':<4} {'Hits':<5} What"]
    for bp in dbg.breakpoints.values():
        out.append(f"{bp.num:<4} {bp.kind:<11} {'y' if bp.enabled else 'n':<4} {bp.hits:<5} {esc(bp.describe())}"
                   + (" (temporary)" if bp.temporary else ""))
    return out


def view_symbols(dbg: Any, args: list[str]) -> list[str]:
    pat = args[0] if args else ""
    syms = sorted((a, n) for n, a in dbg.symbols.items() if pat in n)
    return [f"{a:#x}  {esc(n)}" for a, n in syms] or ["No symbols."]


def view_sysctls(dbg: Any, args: list[str]) -> list[str]:
    ents = dbg.k.sysctl.entries
    if not ents:
        return ["No sysctls on this machine."]
    return [f"{n} = {e.value}  [dim]({e.kind}, {e.minimum}..{e.maximum})[/]" for n, e in sorted(ents.items())]


def view_policies(dbg: Any, args: list[str]) -> list[str]:
    from emukern.kernel.policies import SWITCHES
    out = []
    pol = dbg.k.policies
    for n, v in pol.values.items():
        sw = SWITCHES[n]
        mark = "" if sw.arch == dbg.arch else " [dim](other arch)[/]"
        vals = sw.values + tuple(x for (s, x) in pol.variants if s == n)
        out.append(f"{n} = [bold]{v}[/]  (values: {'|'.join(vals)}; {esc(sw.patch.short)}){mark}")
    return out


def view_views(dbg: Any, args: list[str]) -> list[str]:
    return [f"{v.name:<12} {esc(v.help)}" for v in sorted(VIEWS.values(), key=lambda v: v.name)]


register_view("registers", view_regs, "general registers (or the ones named: info regs a0 pc)", ("regs", "r"))
register_view("fregs", view_fregs, "floating-point registers (RISC-V f0-f31; arm64 v0-v31)", ("float",))
register_view("vregs", view_vregs, "RISC-V vector registers: info vregs [e8|e16|e32|e64] [vN ...] "
              "(default: vtype's SEW)", ("vector",))
register_view("zregs", lambda d, a: view_zregs(d, a, "z"), "arm64 SVE Z registers: info zregs [e8|e16|e32|e64] "
              "[zN ...] (default e64)")
register_view("pregs", lambda d, a: view_zregs(d, a, "p"), "arm64 SVE predicates: info pregs [e8|e16|e32|e64] "
              "[pN ... ffr] (default .b)")
register_view("task", view_task, "the current task (or: info task TID), with its arch thread state")
register_view("tasks", view_tasks, "every task")
register_view("cpu", view_cpu, "per-CPU state: clock, run queue, ticks, vector unit", ("cpus",))
register_view("kernel", view_kernel, "VS / TIF flags, sve_timeout vs jiffies, lock statistics, sysctls, policies")
register_view("breakpoints", view_breakpoints, "breakpoints", ("break", "b"))
register_view("symbols", view_symbols, "ELF symbols (info symbols [SUBSTRING])", ("sym",))
register_view("sysctls", view_sysctls, "sysctl entries", ("sysctl",))
register_view("policies", view_policies, "policy switches of the modelled Linux changes", ("policy",))
register_view("views", view_views, "this list")


def view_signals(dbg: Any, args: list[str]) -> list[str]:
    """info signals [TID]: actions, blocked / pending sets, the alternate stack (kernel/signal.py)."""
    task = dbg.task() if not args else dbg.k.tasks.get(int(args[0], 0))
    if task is None:
        return ["no such task" if args else "no current task"]
    v = signal_delivery.signal_view(dbg.k, task)
    out = [f"signals of tid {v['tid']}: {v['delivered']} delivered, {v['sigreturns']} rt_sigreturn"]
    out.append("  blocked:  " + (" ".join(v["blocked"]) or "-"))
    out.append("  pending:  " + (" ".join(v["pending"]) or "-") + "   (thread)")
    out.append("            " + (" ".join(v["shared_pending"]) or "-") + "   (process)")
    alt = v["altstack"]
    out.append(f"  altstack: {alt['flags']}" + (f" sp={alt['sp']:#x} size={alt['size']}" if alt["size"] else ""))
    if not v["actions"]:
        out.append("  actions:  every signal SIG_DFL")
    for name, a in v["actions"].items():
        out.append(f"  {name:<12} {esc(where(dbg, int(a['handler'], 16)) if a['handler'].startswith('0x') else a['handler'])}"
                   f"  flags={a['flags']:#x} mask={a['mask']:#x}")
    return out


register_view("signals", view_signals, "signal actions, blocked and pending sets, the alternate stack",
              ("sig",))
