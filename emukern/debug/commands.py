"""The debugger's commands: a registry (name, aliases, usage, help, function) and a Session that
parses a command line, runs it and hands its output lines (rich markup) to a printer.

Every user mistake raises :class:`DebugError` and becomes one ``error: ...`` line (plus a hint);
nothing a user types produces a traceback.
"""
from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from typing import Any, Callable

from rich.markup import escape as esc

from emukern.debug import views as V
from emukern.debug.engine import TRAP_CLASSES, Debugger
from emukern.debug.errors import DebugError
from emukern.errors import MemoryFault
from emukern.debug.regs import read_register, register_names, write_register
from emukern.errors import EmukernError


@dataclass
class Command:
    name: str
    fn: Callable[["Session", str], list[str] | None]
    usage: str
    help: str
    aliases: tuple[str, ...] = ()
    category: str = "misc"
    detail: str = ""


COMMANDS: dict[str, Command] = {}


def command(name: str, usage: str, help: str, aliases: tuple[str, ...] = (), category: str = "misc",
            detail: str = "") -> Callable[[Callable[["Session", str], list[str] | None]], Callable[..., Any]]:
    def deco(fn: Callable[["Session", str], list[str] | None]) -> Callable[..., Any]:
        COMMANDS[name] = Command(name, fn, usage, help, aliases, category, detail)
        return fn
    return deco


def register_command(name: str, fn: Callable[["Session", str], list[str] | None], usage: str, help: str,
                     aliases: tuple[str, ...] = (), category: str = "misc") -> None:
    """Add a command from other code (its fn gets the Session and the argument string)."""
    COMMANDS[name] = Command(name, fn, usage, help, aliases, category)


def find_command(word: str) -> Command:
    w = word.lower()
    if w in COMMANDS:
        return COMMANDS[w]
    for c in COMMANDS.values():
        if w in c.aliases:
            return c
    cands = sorted(c.name for c in COMMANDS.values() if c.name.startswith(w))
    if len(cands) == 1:
        return COMMANDS[cands[0]]
    if cands:
        raise DebugError(f"ambiguous command {word!r}: {', '.join(cands)}")
    raise DebugError(f"unknown command {word!r}", hint="type `help` for the list of commands")


class Session:
    """One debugging session: a Debugger plus command parsing and output."""

    def __init__(self, dbg: Debugger, printer: Callable[[str], None]) -> None:
        self.dbg = dbg
        self.print = printer
        self.quit_requested = False
        self.last_x: tuple[int, str, int] = (1, "x", 4)
        self.errors = 0

    def execute(self, line: str) -> bool:
        """Run one command line; False if it failed (the error has been printed)."""
        line = line.strip()
        if not line or line.startswith("#"):
            return True
        m = re.match(r"([A-Za-z_-]+)(/\S*)?\s*(.*)$", line)
        if m is None:
            self._error(DebugError(f"cannot parse {line!r}", hint="type `help`"))
            return False
        word, fmt, rest = m.group(1), m.group(2) or "", m.group(3)
        try:
            cmd = find_command(word)
            lines = cmd.fn(self, (fmt + " " + rest).strip() if fmt else rest)
            for ln in lines or []:
                self.print(ln)
            return True
        except DebugError as exc:
            self._error(exc)
        except EmukernError as exc:
            self._error(DebugError(exc.message, getattr(exc, "hint", None)))
        except Exception as exc:  # noqa: BLE001 - never a traceback for a user
            if os.environ.get("EMUKERN_DEBUG"):
                raise
            self._error(DebugError(f"internal error: {type(exc).__name__}: {exc}",
                                   hint="this is a bug in emukern's debugger; EMUKERN_DEBUG=1 shows a traceback"))
        return False

    def _error(self, exc: DebugError) -> None:
        self.errors += 1
        self.print(f"[bold red]error:[/] {esc(exc.message)}")
        if exc.hint:
            self.print(f"  [dim]hint: {esc(exc.hint)}[/]")

    def stop(self, ev: Any) -> list[str]:
        dbg = self.dbg
        if getattr(dbg, "echo_traps", True) or ev.reason in ("step", "finish", "trap-entry"):
            return V.stop_lines(dbg, ev)
        # `set echo off`: a continue, until or run stops without the list of every trap it handled
        n = len([i for i in ev.handled if i is not ev.info]) + getattr(dbg, "handled_quiet", 0)
        ev.handled = []
        lines = V.stop_lines(dbg, ev)
        if n:
            lines.insert(0, f"[dim]({n} trap{'s' if n != 1 else ''} handled; `set echo on` lists them)[/]")
        return lines


def _int(text: str, what: str = "number") -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise DebugError(f"expected a {what}, got {text!r}") from None


def _args(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise DebugError(f"cannot parse arguments: {exc}") from None


# ---- run control --------------------------------------------------------------------------------------
@command("stepi", "stepi [N]", "execute N guest instructions on the current CPU (stops at a trap entry)",
         ("si",), "run control",
         "Counts come from the CPU's exact instruction counter.  An instruction that traps stops the step "
         "before the kernel handler runs: `finish` (or `step`) runs the handler.")
def cmd_stepi(s: Session, arg: str) -> list[str]:
    n = _int(arg.strip(), "count") if arg.strip() else 1
    ev = s.dbg.stepi(n)
    return s.stop(ev)


@command("step", "step", "one guest instruction, including the kernel's handling of a trap it raises",
         ("s", "next", "n"), "run control")
def cmd_step(s: Session, arg: str) -> list[str]:
    if arg.strip():
        raise DebugError("step takes no argument", hint="use `stepi N` to execute N instructions")
    return s.stop(s.dbg.step())


@command("continue", "continue", "run until a breakpoint, a trap breakpoint, a condition or the end",
         ("c", "cont"), "run control")
def cmd_continue(s: Session, arg: str) -> list[str]:
    return s.stop(s.dbg.cont())


@command("finish", "finish", "run the current kernel trap handler to its end and show its decision",
         ("fin",), "run control")
def cmd_finish(s: Session, arg: str) -> list[str]:
    return s.stop(s.dbg.finish())


@command("until", "until ADDR|SYMBOL", "continue to an address or ELF symbol", ("u", "advance"), "run control")
def cmd_until(s: Session, arg: str) -> list[str]:
    if not arg.strip():
        raise DebugError("until needs an address or symbol", hint="e.g. until done")
    return s.stop(s.dbg.until(arg))


def _kept(kept: list[str]) -> list[str]:
    return [f"kept from the prompt: {', '.join(kept)}"] if kept else []


@command("run", "run", "restart the program from its entry and continue", ("r",), "run control")
def cmd_run(s: Session, arg: str) -> list[str]:
    kept = s.dbg.restart()
    return ["Restarted."] + _kept(kept) + s.stop(s.dbg.cont())


@command("restart", "restart", "reload the program and stop at its first instruction (breakpoints and "
         "the prompt's sysctl/policy changes kept)",
         (), "run control")
def cmd_restart(s: Session, arg: str) -> list[str]:
    kept = s.dbg.restart()
    return (["Restarted at the entry point."] + _kept(kept) +
            ([V.location_line(s.dbg)] if s.dbg.task() is not None else []))


# ---- breakpoints ------------------------------------------------------------------------------------------
BREAK_DETAIL = """\
break ADDR|SYMBOL[+OFF]          stop before the instruction at that address executes
break trap syscall [NAME|NR]     stop at a syscall (optionally only that one) before its handler
break trap first-use             RISC-V vector first use (VS=Off) / arm64 SVE access trap
break trap mrs                   arm64 EL0 MRS of a system register (do_el0_undef / do_el0_sys)
break trap sve-access            arm64 SVE access trap (do_sve_acc)
break trap illegal               any illegal/undefined-instruction trap
break trap any                   every trap (not timer ticks: `break trap timer` for those)
   ... add `after` to stop after the handler instead of before it
break when CONDITION             stop when CONDITION holds (after a trap; before an instruction
                                 when it reads registers/pc/vs), e.g.
   break when tif_sve-changes    break when vs=Dirty    break when jiffies>sve_timeout
   break when syscall=write and a0>0       (and/or/not, = == != < <= > >=, `X-changes`)
   variables: see `help conditions`"""


@command("break", "break ADDR|SYMBOL | break trap KIND [ARG] [after] | break signal [NAME] | break when COND",
         "set a breakpoint at an address/symbol, on a trap kind, or on a kernel-state condition",
         ("b", "br"), "breakpoints", BREAK_DETAIL)
def cmd_break(s: Session, arg: str) -> list[str]:
    a = arg.strip()
    if not a:
        raise DebugError("break needs a location", hint="break SYMBOL | break trap KIND | break when COND")
    words = a.split()
    head = words[0].lower()
    if head == "trap":
        rest = words[1:]
        if not rest:
            raise DebugError("break trap needs a kind", hint="one of: " + ", ".join(TRAP_CLASSES))
        phase = "entry"
        if rest[-1].lower() in ("after", "exit"):
            phase = "exit"
            rest = rest[:-1]
        elif rest[-1].lower() in ("before", "entry"):
            rest = rest[:-1]
        if not rest or len(rest) > 2:
            raise DebugError("usage: break trap KIND [NAME|NR] [after]")
        bp = s.dbg.add_trap_breakpoint(rest[0], rest[1] if len(rest) > 1 else None, phase)
        return [f"Trap breakpoint {bp.num}: {esc(bp.describe())}"]
    if head == "signal":
        if len(words) > 2:
            raise DebugError("usage: break signal [NAME|NR]")
        bp = s.dbg.add_signal_breakpoint(words[1] if len(words) > 1 else None)
        return [f"Signal breakpoint {bp.num}: {esc(bp.describe())}"]
    if head == "when":
        bp = s.dbg.add_cond_breakpoint(a[4:].strip())
        return [f"Breakpoint {bp.num}: {esc(bp.describe())}"]
    bp = s.dbg.add_addr_breakpoint(a)
    return [f"Breakpoint {bp.num} at {esc(bp.describe())}"]


@command("tbreak", "tbreak ADDR|SYMBOL", "a breakpoint deleted when first hit", (), "breakpoints")
def cmd_tbreak(s: Session, arg: str) -> list[str]:
    if not arg.strip():
        raise DebugError("tbreak needs an address or symbol")
    bp = s.dbg.add_addr_breakpoint(arg, temporary=True)
    return [f"Temporary breakpoint {bp.num} at {esc(bp.describe())}"]


def _watch(s: Session, arg: str, access: str) -> list[str]:
    words = arg.split()
    if not 1 <= len(words) <= 2:
        raise DebugError("usage: watch ADDR|SYMBOL [LENGTH]", hint="e.g. watch counter 8 (LENGTH defaults to 8)")
    addr = s.dbg.eval_addr(words[0])
    length = _int(words[1], "length") if len(words) > 1 else 8
    wp = s.dbg.add_watchpoint(addr, length, access)
    return [f"Watchpoint {wp.num}: {esc(wp.describe())}"]


@command("watch", "watch ADDR|SYMBOL [LEN]", "stop at a guest instruction that writes [ADDR, ADDR+LEN) "
         "(LEN default 8)", (), "breakpoints")
def cmd_watch(s: Session, arg: str) -> list[str]:
    return _watch(s, arg, "w")


@command("rwatch", "rwatch ADDR|SYMBOL [LEN]", "stop at a guest instruction that reads the range", (), "breakpoints")
def cmd_rwatch(s: Session, arg: str) -> list[str]:
    return _watch(s, arg, "r")


@command("awatch", "awatch ADDR|SYMBOL [LEN]", "stop at a guest instruction that reads or writes the range",
         (), "breakpoints")
def cmd_awatch(s: Session, arg: str) -> list[str]:
    return _watch(s, arg, "a")


@command("delete", "delete [N...]", "delete breakpoints (all without an argument)", ("d",), "breakpoints")
def cmd_delete(s: Session, arg: str) -> list[str]:
    nums = [_int(w, "breakpoint number") for w in arg.split()]
    if not nums:
        gone = s.dbg.delete_breakpoint(None)
        return [f"Deleted {len(gone)} breakpoint(s)."]
    for n in nums:
        s.dbg.delete_breakpoint(n)
    return [f"Deleted breakpoint {', '.join(map(str, nums))}."]


def _toggle(s: Session, arg: str, on: bool) -> list[str]:
    nums = [_int(w, "breakpoint number") for w in arg.split()] or list(s.dbg.breakpoints)
    for n in nums:
        bp = s.dbg.breakpoints.get(n)
        if bp is None:
            raise DebugError(f"no breakpoint number {n}")
        bp.enabled = on
    return [f"{'Enabled' if on else 'Disabled'} {', '.join(map(str, nums)) or 'nothing'}."]


@command("enable", "enable [N...]", "enable breakpoints", (), "breakpoints")
def cmd_enable(s: Session, arg: str) -> list[str]:
    return _toggle(s, arg, True)


@command("disable", "disable [N...]", "disable breakpoints", (), "breakpoints")
def cmd_disable(s: Session, arg: str) -> list[str]:
    return _toggle(s, arg, False)


# ---- state ------------------------------------------------------------------------------------------------
@command("info", "info VIEW [ARGS]", "show state: regs, vregs, zregs, pregs, fregs, task, tasks, cpu, kernel, "
         "breakpoints, symbols, sysctls, policies (`info views`)", ("i",), "state")
def cmd_info(s: Session, arg: str) -> list[str]:
    words = _args(arg)
    if not words:
        return ["info what?"] + V.view_views(s.dbg, [])
    view = V.find_view(words[0].lower())
    return view.fn(s.dbg, words[1:])


@command("trap", "trap", "the current (or last) trap: kind, syndrome, instruction, handler, decision, cycles",
         (), "state")
def cmd_trap(s: Session, arg: str) -> list[str]:
    info = s.dbg.last_trap
    if info is None:
        return ["No trap yet."]
    return V.trap_lines(s.dbg, info)


@command("traps", "traps [N|all]", "the trap history (last N, default 20) and counts by kind", (), "state")
def cmd_traps(s: Session, arg: str) -> list[str]:
    k = s.dbg.k
    a = arg.strip()
    log = list(k.trap_log)
    n = len(log) if a == "all" else (_int(a, "count") if a else 20)
    out = [f"{'#':>5} {'cpu':>3} {'tid':>4} {'kind':<11} {'pc':<22} {'handler':<28} {'cycles':>7}  decision"]
    for r in log[-n:] if n else []:
        out.append(f"{r.seq:>5} {r.cpu:>3} {r.tid:>4} {esc(r.kind):<11} {esc(V.where(s.dbg, r.pc)):<22} "
                   f"{esc(r.handler):<28} {r.cycles:>7}  {esc(r.decision)}")
    if len(log) > n:
        out.insert(1, f"  ... {len(log) - n} earlier trap(s) not shown (traps all)")
    if s.dbg.pending_trap is not None:
        p = s.dbg.pending_trap
        out.append(f"{'-':>5} {p.cpu:>3} {p.tid:>4} {esc(p.trap.kind.value):<11} {esc(V.where(s.dbg, p.trap.pc)):<22} "
                   f"{esc(p.predicted):<28} {'-':>7}  (pending: handler not yet run)")
    out.append("counts: " + (", ".join(f"{a}={b}" for a, b in sorted(k.trap_counts.items())) or "none"))
    return out


_X_SIZES = {"b": 1, "h": 2, "w": 4, "g": 8}


def _parse_xfmt(fmt: str, last: tuple[int, str, int]) -> tuple[int, str, int]:
    count, f, size = 1, last[1], last[2]
    m = re.fullmatch(r"/(\d*)([a-z]*)", fmt)
    if m is None:
        raise DebugError(f"bad format {fmt!r}", hint="x/NFU ADDR: N count, F one of x d u o t c a s i, U one of b h w g")
    if m.group(1):
        count = int(m.group(1))
    for ch in m.group(2):
        if ch in _X_SIZES:
            size = _X_SIZES[ch]
        elif ch in "xduotcasi":
            f = ch
        else:
            raise DebugError(f"bad format letter {ch!r} in {fmt!r}",
                             hint="formats x d u o t c a s i, sizes b h w g")
    if f == "a":
        size = 8
    if f == "c" and "b" not in m.group(2) and not any(c in m.group(2) for c in "hwg"):
        size = 1
    return count, f, size


@command("x", "x/NFU ADDR", "examine memory (gdb style): x/8xw ADDR, x/s msg, x/4gx $sp, x/3i $pc", (),
         "state")
def cmd_x(s: Session, arg: str) -> list[str]:
    fmt, _, addr_text = arg.partition(" ") if arg.startswith("/") else ("", "", arg)
    count, f, size = _parse_xfmt(fmt, s.last_x) if fmt else (1, s.last_x[1], s.last_x[2])
    if count <= 0 or count > 4096:
        raise DebugError("count must be 1..4096")
    s.last_x = (count, f, size)
    if not addr_text.strip():
        raise DebugError("x needs an address", hint="e.g. x/8xb $sp or x/s msg")
    addr = s.dbg.eval_addr(addr_text)
    mm = s.dbg.mm()
    out: list[str] = []
    if f == "i":
        return _disas(s, addr, count, mark_pc=True)
    if f == "s":
        for _ in range(count):
            try:
                raw = mm.read_cstr(addr, 4096)
            except MemoryFault:
                raise DebugError(f"cannot access memory at {addr:#x}") from None
            out.append(f"{esc(V.where(s.dbg, addr))}:  {esc(repr(raw.decode('latin-1')))}")
            addr += len(raw) + 1
        return out
    try:
        data = mm.read(addr, count * size)
    except MemoryFault:
        raise DebugError(f"cannot access memory at {addr:#x}") from None
    per_line = {1: 8, 2: 8, 4: 4, 8: 2}[size]
    vals = [int.from_bytes(data[i * size:(i + 1) * size], "little") for i in range(count)]
    for i in range(0, count, per_line):
        a = addr + i * size
        items = [_fmt_x(v, f, size) for v in vals[i:i + per_line]]
        out.append(f"{esc(V.where(s.dbg, a))}:  " + "  ".join(esc(t) for t in items))
    return out


def _fmt_x(v: int, f: str, size: int) -> str:
    bits = size * 8
    if f == "x":
        return f"0x{v:0{size * 2}x}"
    if f == "d":
        return str(v - (1 << bits) if v >> (bits - 1) else v)
    if f == "u":
        return str(v)
    if f == "o":
        return f"0{v:o}"
    if f == "t":
        return f"{v:0{bits}b}"
    if f == "c":
        ch = chr(v & 0xFF)
        return f"{v & 0xFF} {ch!r}"
    if f == "a":
        return f"{v:#x}"
    return hex(v)


def _disas(s: Session, addr: int, n: int, mark_pc: bool = True) -> list[str]:
    from emukern.disasm import disasm
    mm = s.dbg.mm()
    code = b""
    for size in (n * 4, 64, 16, 4, 2):
        try:
            code = mm.read(addr, size, "x")
            break
        except MemoryFault:
            continue
    if not code:
        raise DebugError(f"cannot read code at {addr:#x}")
    pc = s.dbg.cpu.get_pc() if s.dbg.task() is not None else None
    bps = {b.addr for b in s.dbg.breakpoints.values() if hasattr(b, "addr")}
    out = []
    for a, size, text in disasm(s.dbg.arch, code, addr, n):
        mark = "=>" if mark_pc and a == pc else "  "
        bmark = "[red]b[/]" if a in bps else " "
        raw = code[a - addr:a - addr + size].hex()
        out.append(f"{mark}{bmark} {esc(V.where(s.dbg, a)):<26} {raw:<9} [cyan]{esc(text)}[/]")
    return out


@command("disas", "disas [ADDR [N]]", "disassemble N instructions (default 10) at ADDR (default around pc)",
         ("disassemble",), "state")
def cmd_disas(s: Session, arg: str) -> list[str]:
    words = arg.split()
    n = 10
    if words:
        addr = s.dbg.eval_addr(words[0])
        if len(words) > 1:
            n = _int(words[1], "count")
    else:
        addr = s.dbg.cpu.get_pc()
    if not 0 < n <= 1000:
        raise DebugError("count must be 1..1000")
    return _disas(s, addr, n)


@command("print", "print EXPR", "a kernel-state variable (see `help conditions`), register, symbol or address",
         ("p",), "state")
def cmd_print(s: Session, arg: str) -> list[str]:
    from emukern.debug.conditions import EvalContext, known_name, lookup
    a = arg.strip()
    if not a:
        raise DebugError("print needs an expression")
    dbg = s.dbg
    name = a.lstrip("$")
    if known_name(name, dbg.k, dbg.cpu):
        info = dbg.last_trap
        v = lookup(name, EvalContext(dbg.k, dbg.cpu, dbg.task(), info.trap if info else None))
        if isinstance(v, int) and not isinstance(v, bool):
            return [f"{esc(a)} = {v} ({v:#x})"]
        return [f"{esc(a)} = {esc(str(v))}"]
    v = dbg.eval_addr(a)
    sym = dbg.symbolize(v)
    return [f"{esc(a)} = {v} ({v:#x})" + (f" <{esc(sym)}>" if sym else "")]


@command("set", "set reg NAME VALUE | set mem[/b|h|w|g] ADDR VALUE | set echo on|off",
         "change a register or memory (memory default size g = 8 bytes; VALUE may be \"a string\"); "
         "`set echo off`: continue, until and run stop without listing every trap they handled "
         "(a count instead; step and finish still show theirs)", (), "state")
def cmd_set(s: Session, arg: str) -> list[str]:
    m = re.match(r"(\w+)(/[bhwg])?\s*(.*)$", arg.strip())
    if m is None or not arg.strip():
        raise DebugError("usage: set reg NAME VALUE | set mem[/SIZE] ADDR VALUE | set echo on|off")
    what, size_s, rest = m.group(1).lower(), m.group(2), m.group(3)
    dbg = s.dbg
    if what == "echo":
        val = rest.strip().lower()
        if val not in ("on", "off"):
            raise DebugError("usage: set echo on|off",
                             hint="off: a continue lists no handled traps, only how many")
        dbg.echo_traps = val == "on"
        return [f"echo of handled traps: {val}"]
    if what in ("reg", "register", "var"):
        words = rest.split(None, 1)
        if len(words) != 2:
            raise DebugError("usage: set reg NAME VALUE")
        name, val_text = words[0].lstrip("$"), words[1].lstrip("= ").strip()
        val = dbg.eval_addr(val_text)
        write_register(dbg.cpu, name, val)
        return [f"{name} = {read_register(dbg.cpu, name):#x}"]
    if what in ("mem", "memory"):
        words = _args(rest)
        if len(words) != 2:
            raise DebugError("usage: set mem[/b|h|w|g] ADDR VALUE")
        addr = dbg.eval_addr(words[0])
        valtext = rest.split(None, 1)[1].strip()
        if valtext.startswith('"'):
            data = words[1].encode("utf-8")
        else:
            size = _X_SIZES[size_s[1]] if size_s else 8
            v = dbg.eval_addr(words[1]) if not words[1].lstrip("-").isdigit() else int(words[1])
            data = (v & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
        try:
            dbg.mm().write(addr, data, "")      # need="": the debugger may patch read-only pages
        except MemoryFault:
            raise DebugError(f"cannot write memory at {addr:#x}") from None
        from unicorn import UcError
        for cpu in dbg.k.cpus:                  # drop stale translations of patched code
            try:
                cpu.uc.ctl_remove_cache(addr, addr + len(data))
            except UcError as exc:
                raise DebugError(f"wrote {len(data)} byte(s) at {addr:#x}, but cpu {cpu.index} could not drop "
                                 f"its translated code there ({exc}): it may run the old instructions",
                                 hint="restart, or write before the code first runs") from None
        return [f"wrote {len(data)} byte(s) at {esc(V.where(dbg, addr))}"]
    raise DebugError(f"cannot set {what!r}", hint="set reg NAME VALUE | set mem ADDR VALUE")


# ---- kernel knobs ---------------------------------------------------------------------------------
@command("sysctl", "sysctl [KEY [VALUE]]", "read or write a sysctl (like writing /proc/sys)", (), "kernel")
def cmd_sysctl(s: Session, arg: str) -> list[str]:
    words = arg.split()
    k = s.dbg.k
    if not words:
        return V.view_sysctls(s.dbg, [])
    key = words[0].replace("/", ".")
    if key.startswith("proc.sys."):
        key = key[9:]
    if len(words) == 1:
        return [f"{key} = {k.sysctl.get(key)}"]
    if len(words) > 2:
        raise DebugError("usage: sysctl KEY [VALUE]")
    k.sysctl.write(key, words[1])
    s.dbg.remember_setting("sysctl", key, words[1])
    return [f"{key} = {k.sysctl.get(key)}"]


@command("policy", "policy [NAME [VALUE]]", "show or switch a modelled Linux change's policy at run time", (), "kernel")
def cmd_policy(s: Session, arg: str) -> list[str]:
    words = arg.split()
    k = s.dbg.k
    if not words:
        return V.view_policies(s.dbg, [])
    if len(words) == 1:
        if words[0] not in k.policies.values:
            k.policies.set(words[0], "")      # raises the unknown-policy error with its hint
        return [f"{words[0]} = {k.policies[words[0]]}"]
    if len(words) > 2:
        raise DebugError("usage: policy NAME VALUE")
    k.policies.set(words[0], words[1])
    s.dbg.remember_setting("policy", words[0], words[1])
    from emukern.kernel.policies import SWITCHES
    return [f"{words[0]} = {k.policies[words[0]]}",
            f"  takes effect at the next decision point ({esc(SWITCHES[words[0]].decided)})"]


@command("cpu", "cpu [N]", "show or select the current CPU", (), "state")
def cmd_cpu(s: Session, arg: str) -> list[str]:
    if arg.strip():
        s.dbg.set_cpu(_int(arg.strip(), "CPU number"))
    lines = [f"current cpu {s.dbg.cur}"]
    if s.dbg.task() is not None:
        lines.append(V.location_line(s.dbg))
    return lines


# ---- misc ------------------------------------------------------------------------------------------
CONDITIONS_HELP = "conditions"


@command("help", "help [COMMAND]", "list commands, or explain one (`help conditions`, `help break`)",
         ("h", "?"), "misc")
def cmd_help(s: Session, arg: str) -> list[str]:
    a = arg.strip()
    if a in ("conditions", "condition", "when"):
        from emukern.debug.conditions import VARIABLES
        out = ["Conditions (`break when COND`) are checked after every trap the kernel handles, and -- when",
               "they read state a guest instruction can change (registers, pc, vs, cycles, insns) -- also",
               "before every guest instruction (slower: a Python check per instruction while one is set);",
               "there they stop when the condition becomes true, before the next instruction runs.",
               "Trap-time variables (syscall, handler, decision, trap, tif_*, sve_*, jiffies ...) only",
               "change inside the kernel, so they are read after traps only.",
               "  NAME OP VALUE  (OP: = == != < <= > >=; VALUE a number, a word or another NAME)",
               "  NAME-changes   true when NAME differs from the previous check",
               "  and / or / not / ( )",
               "Variables:"]
        out += [f"  {v.name:<26} {esc(v.help)}" for v in sorted(VARIABLES.values(), key=lambda v: v.name)]
        out += ["  sysctl.KEY / policy.NAME / trap_count.KIND / any register name (a0, x8, pc, sp ...)"]
        return out
    if a:
        c = find_command(a.split()[0])
        out = [f"[bold]{esc(c.usage)}[/]", f"  {esc(c.help)}"]
        if c.aliases:
            out.append(f"  aliases: {', '.join(c.aliases)}")
        if c.detail:
            out += ["  " + esc(line) for line in c.detail.splitlines()]
        if c.name == "info":
            out += ["  views:"] + ["    " + ln for ln in V.view_views(s.dbg, [])]
        return out
    out = []
    cats: dict[str, list[Command]] = {}
    for c in COMMANDS.values():
        cats.setdefault(c.category, []).append(c)
    for cat in ("run control", "breakpoints", "state", "kernel", "misc"):
        if cat not in cats:
            continue
        out.append(f"[bold]{cat}[/]")
        for c in cats.pop(cat):
            out.append(f"  {esc(c.usage):<44} {esc(c.help)}")
    for cat, cs in cats.items():
        out.append(f"[bold]{cat}[/]")
        for c in cs:
            out.append(f"  {esc(c.usage):<44} {esc(c.help)}")
    out.append("`help COMMAND` for details, `help conditions` for the condition language.")
    return out


@command("quit", "quit", "leave the debugger", ("q", "exit"), "misc")
def cmd_quit(s: Session, arg: str) -> list[str]:
    s.quit_requested = True
    return []


def completion_words(s: Session, words: list[str]) -> list[str]:
    """Candidates for the word being typed, given the words before it."""
    if not words:
        names = list(COMMANDS)
        for c in COMMANDS.values():
            names += list(c.aliases)
        return sorted(set(names))
    try:
        cmd = find_command(words[0])
    except DebugError:
        return []
    syms = sorted(s.dbg.symbols)
    if cmd.name == "info":
        return sorted(V.VIEWS) if len(words) == 1 else []
    if cmd.name == "break":
        if len(words) == 1:
            return ["trap", "when"] + syms
        if words[1] == "trap":
            if len(words) == 2:
                return list(TRAP_CLASSES)
            if len(words) == 3 and words[2] == "syscall":
                from emukern.kernel.syscalls import SYSCALL_NUMBERS
                return sorted(SYSCALL_NUMBERS) + ["after"]
            return ["after"]
        if words[1] == "when":
            from emukern.debug.conditions import VARIABLES
            return sorted(VARIABLES) + [f"sysctl.{k}" for k in s.dbg.k.sysctl.entries]
        return []
    if cmd.name in ("until", "tbreak", "disas", "x", "print"):
        return syms + ["$" + r for r in register_names(s.dbg.cpu)] if len(words) == 1 else []
    if cmd.name == "set":
        if len(words) == 1:
            return ["reg", "mem", "echo"]
        if words[1] == "echo" and len(words) == 2:
            return ["on", "off"]
        if words[1] == "reg" and len(words) == 2:
            return register_names(s.dbg.cpu)
        if words[1].startswith("mem") and len(words) == 2:
            return syms
        return []
    if cmd.name == "sysctl" and len(words) == 1:
        return sorted(s.dbg.k.sysctl.entries)
    if cmd.name == "policy":
        if len(words) == 1:
            return sorted(s.dbg.k.policies.values)
        if len(words) == 2:
            from emukern.kernel.policies import SWITCHES
            sw = SWITCHES.get(words[1])
            pol = s.dbg.k.policies
            return list(sw.values) + [v for (n, v) in pol.variants if n == words[1]] if sw else []
    if cmd.name == "help" and len(words) == 1:
        return sorted(COMMANDS) + ["conditions"]
    return []
