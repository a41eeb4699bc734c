"""The debugger's engine: run control, breakpoints and trap stops over one emukern machine.

Shared by the REPL (``emukern debug``) and the gdb stub (``emukern gdbserver``).

How stopping works (no threads, no blocking inside Unicorn hooks):

* **Address breakpoints** are Unicorn ``UC_HOOK_CODE`` hooks bound to one address on every CPU.
  The hook runs before the instruction; it un-counts it (the exact instruction counter hook ran
  first), records the stop and calls ``cpu.stop()``, so the instruction has not executed.  The
  next resume skips that one hit.
* **Trap entry** (before the kernel handler runs) uses ``Kernel.trap_gate``: the gate says "defer"
  and the kernel parks the Trap in ``kernel.deferred_trap`` with the CPU stopped at the trapping
  instruction; :meth:`Debugger.finish` (or any resume) calls ``kernel.runloop.resume_trap()``, which runs
  the handler outside the hook.
* **Trap exit** (after the handler decided) and ``break when`` conditions use
  ``kernel.trap_listeners``: at "exit" the listener evaluates them and calls ``cpu.stop()``.
  A condition that reads state a guest instruction can change (registers, pc, vs -- the vector
  unit sets VS=Dirty -- cycles, insns) is also checked before every instruction by a
  ``UC_HOOK_CODE`` over all addresses, installed only while such a condition is enabled (it
  costs a Python call per instruction); there it stops when the condition *becomes* true,
  before the instruction after the one that made it true.
* **Stepping** caps how far the scheduler runs the current CPU (``Kernel.run_cap``), so the normal
  round (ticks, timers, scheduling) still happens between instructions.
* **Watchpoints** are Unicorn ``UC_HOOK_MEM_READ``/``UC_HOOK_MEM_WRITE`` hooks on every CPU.  A
  stop from inside an access abandons the instruction (the PC stays on it and it executes again
  on resume, like an Arm or RISC-V hardware watchpoint, which traps before the access retires);
  a write has already reached memory by then.  The hook un-counts the instruction and the
  resume skips that one re-executed hit.  They see the accesses of guest instructions that run
  in Unicorn -- not the kernel's copies to user memory (Linux's user watchpoints exclude kernel
  accesses too) and not RVV vector loads/stores, which emukern's vector unit performs in Python.
"""
from __future__ import annotations

import signal
from dataclasses import dataclass, field
from unicorn import UcError
from typing import Any, Callable

from emukern.debug.conditions import Condition, EvalContext
from emukern.debug.errors import DebugError
from emukern.debug.regs import read_register
from emukern.machine.trap import Trap, TrapKind
from emukern.kernel.syscalls import table as syscalls_table

TRAP_CLASSES = ("syscall", "first-use", "mrs", "sve-access", "illegal", "sysreg", "mem-fault",
                "breakpoint", "timer", "any")


# with `set echo off`, how many handled traps a resume keeps for its stop (a step's own trap
# among them); the others are only counted
QUIET_KEEP = 8


# ---- breakpoints --------------------------------------------------------------------------------
@dataclass
class Breakpoint:
    num: int
    enabled: bool = True
    hits: int = 0
    temporary: bool = False

    @property
    def kind(self) -> str:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError


@dataclass
class AddrBreakpoint(Breakpoint):
    addr: int = 0
    label: str = ""

    @property
    def kind(self) -> str:
        return "breakpoint"

    def describe(self) -> str:
        return f"{self.addr:#x}" + (f" <{self.label}>" if self.label else "")


@dataclass
class TrapBreakpoint(Breakpoint):
    what: str = "any"                 # one of TRAP_CLASSES
    arg: str | None = None            # syscall name or number
    phase: str = "entry"              # entry (before the handler) or exit (after it)

    @property
    def kind(self) -> str:
        return "trap"

    def describe(self) -> str:
        s = self.what + (f" {self.arg}" if self.arg else "")
        return s + (" (after the handler)" if self.phase == "exit" else " (before the handler)")


@dataclass
class CondBreakpoint(Breakpoint):
    cond: Condition | None = None
    last_true: bool = False           # its value at the last check (instruction checks fire on a rise)

    @property
    def kind(self) -> str:
        return "condition"

    @property
    def per_instruction(self) -> bool:
        return self.cond is not None and self.cond.per_instruction

    def describe(self) -> str:
        where = "after each trap and before each instruction" if self.per_instruction else "after each trap"
        return f"when {self.cond.text if self.cond else '?'} (checked {where})"


def _in_kernel_stub(cpu: Any, address: int) -> bool:
    """arm64 kernel stubs (FP/SVE save/restore) run on the guest's Unicorn CPU at EL1."""
    if getattr(cpu, "arch", "") != "arm64":
        return False
    from emukern.machine import cpu_arm64
    base = getattr(cpu_arm64, "STUB_BASE", None)
    size = getattr(cpu_arm64, "STUB_SIZE", 0)
    return base is not None and base <= address < base + max(size, 0x10000)


WATCH_KINDS = {"w": "write", "r": "read", "a": "access"}


@dataclass
class Watchpoint(Breakpoint):
    """A data watchpoint on guest memory: stops at a guest instruction that writes ("w"), reads
    ("r") or accesses ("a") any byte of [addr, addr+length)."""
    addr: int = 0
    length: int = 1
    access: str = "w"
    hit_addr: int = 0                 # the data address of the last hit
    hit_access: str = ""              # "w" or "r": what the last hit did

    @property
    def kind(self) -> str:
        return "watchpoint"

    def describe(self) -> str:
        return f"{WATCH_KINDS[self.access]} {self.addr:#x}..{self.addr + self.length - 1:#x}"


@dataclass
class SignalBreakpoint(Breakpoint):
    sig: int | None = None            # None: any signal delivered to a handler

    @property
    def kind(self) -> str:
        return "signal"

    def describe(self) -> str:
        from emukern.kernel.signal import signal_name
        return (signal_name(self.sig) if self.sig else "any signal") + \
            " (at delivery: stops on the handler's first instruction)"


# ---- what the debugger knows about a trap -----------------------------------------------------------
@dataclass
class TrapInfo:
    trap: Trap
    cpu: int
    tid: int
    classes: set[str]
    predicted: str                    # the handler we expect to run (before it ran)
    disasm: str
    before: dict[str, Any]
    after: dict[str, Any] | None = None
    done: bool = False
    seq: int = 0
    mrs_result: tuple[int, int] | None = None   # an emulated EL0 MRS: (Rt, the value it received)


@dataclass
class StopEvent:
    reason: str                       # breakpoint | trap-entry | trap-exit | condition | step | exited |
    #                                   interrupted | until | finish | error
    cpu: int = 0
    pc: int = 0
    bp: Breakpoint | None = None
    info: TrapInfo | None = None
    message: str = ""
    handled: list[TrapInfo] = field(default_factory=list)


# state shown as "before -> after" around a trap (names from the condition registry)
WATCH_VARIABLES = ["vs", "defer_restore", "tif_sve", "sve_el0", "sve_vl", "sve_timeout", "jiffies"]


class Debugger:
    #: polled every few scheduler rounds while the guest runs; True interrupts (gdb's Ctrl-C)
    interrupt_check: Callable[[], bool] | None = None

    def __init__(self, factory: Callable[[], Any]) -> None:
        """``factory()`` returns a loaded :class:`emukern.api.Machine` (called again on restart)."""
        self.factory = factory
        self.breakpoints: dict[int, Breakpoint] = {}
        self._next_bp = 1
        self.m: Any = None
        self.k: Any = None
        # sysctl/policy changes made at the prompt, in order: restart re-applies them to the new
        # machine (the factory rebuilds it from the command line, which does not have them)
        self.prompt_settings: list[tuple[str, str, str]] = []
        self.start()

    # ---- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """(Re)load the program and stop at its first instruction."""
        self.m = self.factory()
        self.k = self.m.kernel
        self.k.trap_gate = self._gate
        self.k.trap_listeners.append(self._listener)
        self.k.signal_listeners.append(self._on_signal)
        for cpu in self.k.cpus:
            # address breakpoints are per-instruction code hooks: execute vector instructions
            # one trap at a time so a breakpoint on any of them is seen
            cpu.batch_vector = False
            # breakpoint, watchpoint and condition hooks run inside a block and read or adjust
            # the count of the instruction they stop at: count per instruction while debugging
            cpu.counter.set_exact(True)
        self.cur = 0
        self.finished = False
        self.exit_message = ""
        self.last_trap: TrapInfo | None = None
        self.trap_seq = 0
        self._stop: StopEvent | None = None
        self._stepping_cpu: int | None = None
        self._skip: dict[int, tuple[int, int]] = {}
        self._hooks: dict[int, list[Any]] = {}
        self._whooks: dict[int, list[tuple[Any, Any]]] = {}
        self._cond_hooks: list[tuple[Any, Any]] = []
        self._wskip: dict[int, tuple[int, int]] = {}
        self._handled: list[TrapInfo] = []
        self._interrupted = False
        for bp in self.breakpoints.values():
            if isinstance(bp, AddrBreakpoint):
                self._install(bp.addr)
            elif isinstance(bp, Watchpoint):
                self._install_watch(bp)
            elif isinstance(bp, CondBreakpoint) and bp.cond is not None:
                bp.cond.memo.clear()
        # boot: let the scheduler put the first task on a CPU (no user instruction runs)
        for _ in range(8):
            if any(p.curr is not None for p in self.k.percpu):
                break
            if not self.k.runloop.step_loop(1):
                self._set_finished()
                break
        for i, p in enumerate(self.k.percpu):
            if p.curr is not None:
                self.cur = i
                break
        for bp in self.breakpoints.values():
            if isinstance(bp, CondBreakpoint) and bp.cond is not None:
                bp.cond.prime(self._ctx(None))
                bp.last_true = bool(self._eval_cond(bp, self._ctx(None)))
        self._sync_cond_hook()

    @property
    def arch(self) -> str:
        return self.k.config.arch

    @property
    def cpu(self) -> Any:
        return self.k.cpus[self.cur]

    def task(self, cpu_index: int | None = None) -> Any:
        i = self.cur if cpu_index is None else cpu_index
        return self.k.percpu[i].curr

    @property
    def symbols(self) -> dict[str, int]:
        return getattr(self.k, "symbols", {}) or {}

    @property
    def pending_trap(self) -> TrapInfo | None:
        """The trap whose handler has not run yet (stopped at trap entry), if any."""
        if self.k.deferred_trap is None:
            return None
        return self.last_trap if self.last_trap is not None and not self.last_trap.done else None

    def mm(self) -> Any:
        cpu = self.cpu
        if cpu.mm is not None:
            return cpu.mm
        t = self.task()
        if t is not None:
            return t.mm
        if self.k.init_task is not None:
            return self.k.init_task.mm
        raise DebugError("no address space")

    def set_cpu(self, index: int) -> None:
        if not 0 <= index < len(self.k.cpus):
            raise DebugError(f"no CPU {index}", hint=f"this machine has CPUs 0..{len(self.k.cpus) - 1}")
        self.cur = index

    # ---- symbols -------------------------------------------------------------------------------
    def symbolize(self, addr: int) -> str:
        best: tuple[int, str] | None = None
        for name, a in self.symbols.items():
            if name.startswith(".L") or name.startswith("$"):
                continue
            if a <= addr and (best is None or a > best[0] or (a == best[0] and name < best[1])):
                best = (a, name)
        if best is None or addr - best[0] > 0x10000:
            return ""
        off = addr - best[0]
        return best[1] + (f"+{off}" if off else "")

    def eval_addr(self, text: str) -> int:
        """An address expression: numbers, symbols, $reg / reg, joined with + and -."""
        import re
        s = text.strip().lstrip("*").strip()
        if not s:
            raise DebugError("missing address")
        parts = re.split(r"\s*([+-])\s*", s)
        total, sign = 0, 1
        for i, p in enumerate(parts):
            if i % 2 == 1:
                sign = 1 if p == "+" else -1
                continue
            if p == "" and i == 0:
                continue
            total += sign * self._term(p)
        return total & ((1 << 64) - 1)

    def _term(self, p: str) -> int:
        try:
            return int(p, 0)
        except ValueError:
            pass
        if p in self.symbols:
            return self.symbols[p]
        name = p.lstrip("$")
        try:
            return read_register(self.cpu, name)
        except DebugError:
            pass
        raise DebugError(f"no symbol or register {p!r}",
                         hint="give an address (0x...), an ELF symbol (see `info symbols`) or $reg")

    # ---- breakpoints ------------------------------------------------------------------------------
    def _new_num(self) -> int:
        n = self._next_bp
        self._next_bp += 1
        return n

    def add_addr_breakpoint(self, text: str, temporary: bool = False) -> AddrBreakpoint:
        addr = self.eval_addr(text)
        bp = AddrBreakpoint(self._new_num(), addr=addr, label=self.symbolize(addr), temporary=temporary)
        self.breakpoints[bp.num] = bp
        self._install(addr)
        return bp

    def add_trap_breakpoint(self, what: str, arg: str | None = None, phase: str = "entry") -> TrapBreakpoint:
        what = what.lower()
        if what not in TRAP_CLASSES:
            raise DebugError(f"unknown trap kind {what!r}", hint="one of: " + ", ".join(TRAP_CLASSES))
        if arg is not None and what != "syscall":
            raise DebugError(f"`break trap {what}` takes no argument (only syscall takes NAME|NR)")
        if arg is not None:
            from emukern.kernel.syscalls import SYSCALL_NAMES, SYSCALL_NUMBERS
            try:
                nr = int(arg, 0)
                if nr not in SYSCALL_NAMES:
                    raise DebugError(f"unknown syscall number {nr}")
            except ValueError:
                if arg not in SYSCALL_NUMBERS:
                    raise DebugError(f"unknown syscall {arg!r}",
                                     hint="known: " + ", ".join(sorted(SYSCALL_NUMBERS))) from None
        if what == "timer" and phase == "entry":
            phase = "exit"        # ticks are taken in the scheduler, not in a hook: stop after them
        bp = TrapBreakpoint(self._new_num(), what=what, arg=arg, phase=phase)
        self.breakpoints[bp.num] = bp
        return bp

    def add_signal_breakpoint(self, name: str | None) -> SignalBreakpoint:
        from emukern.kernel.signal import parse_signal
        sig = None
        if name:
            try:
                sig = parse_signal(name)
            except ValueError:
                raise DebugError(f"unknown signal {name!r}", hint="a name (SIGUSR1, usr1) or a number 1-64") from None
        bp = SignalBreakpoint(self._new_num(), sig=sig)
        self.breakpoints[bp.num] = bp
        return bp

    def _on_signal(self, cpu: Any, task: Any, info: Any) -> None:
        """The kernel set up a handler's frame (do_signal): stop at the handler if asked to."""
        if self._stop is not None:
            return
        from emukern.kernel.signal import signal_name
        for bp in self.breakpoints.values():
            if isinstance(bp, SignalBreakpoint) and bp.enabled and bp.sig in (None, info.signo):
                bp.hits += 1
                self._stop = StopEvent("signal", cpu.index, cpu.get_pc(), bp=bp,
                                       message=f"{signal_name(info.signo)} (si_code {info.code}) delivered to "
                                               f"tid {task.tid}: handler at {cpu.get_pc():#x}")
                cpu.stop()
                return

    def add_cond_breakpoint(self, text: str) -> CondBreakpoint:
        cond = Condition(text, self.k, self.cpu)
        bp = CondBreakpoint(self._new_num(), cond=cond)
        try:
            cond.prime(self._ctx(None))
            bp.last_true = bool(cond.evaluate(self._ctx(None)))   # already true: wait for the next rise
        except DebugError:
            raise
        except Exception as exc:  # noqa: BLE001 - reported to the user, the breakpoint is not made
            raise DebugError(f"condition {text!r} cannot be evaluated: {type(exc).__name__}: {exc}") from None
        self.breakpoints[bp.num] = bp
        self._sync_cond_hook()
        return bp

    def _eval_cond(self, bp: CondBreakpoint, ctx: EvalContext, cpu: Any = None, pc: int = 0,
                   info: Any = None) -> bool | None:
        """The condition's value; None when evaluating it raised.  Then, like gdb's "Error in
        testing condition", the run stops naming the error and the breakpoint is disabled so
        `continue` goes on (reported, never swallowed)."""
        try:
            return bool(bp.cond is not None and bp.cond.evaluate(ctx))
        except Exception as exc:  # noqa: BLE001 - reported, not swallowed: stop and say why
            bp.enabled = False
            self._sync_cond_hook()
            if cpu is not None:
                self._stop = StopEvent("error", cpu.index, pc, bp=bp, info=info,
                                       message=f"breakpoint {bp.num} ({bp.describe()}): evaluating the "
                                               f"condition raised {type(exc).__name__}: {exc}; "
                                               "breakpoint disabled")
                cpu.stop()
            return None

    def _sync_cond_hook(self) -> None:
        """Install the per-instruction condition hook while an enabled condition needs it."""
        need = any(isinstance(b, CondBreakpoint) and b.enabled and b.per_instruction
                   for b in self.breakpoints.values())
        if need and not self._cond_hooks:
            from unicorn import UC_HOOK_CODE
            self._cond_hooks = [(cpu, cpu.uc.hook_add(UC_HOOK_CODE, self._cond_hook, cpu.index, 1, 0))
                                for cpu in self.k.cpus]
        elif not need and self._cond_hooks:
            hooks, self._cond_hooks = self._cond_hooks, []
            for cpu, h in hooks:
                try:
                    cpu.uc.hook_del(h)
                except UcError as exc:      # reported: a stale hook would keep stopping the CPU
                    raise DebugError(f"cpu {cpu.index}: could not remove the condition hook: {exc}") from None

    def _cond_hook(self, uc: Any, address: int, size: int, cpu_index: int) -> None:
        if self._stop is not None:
            return
        cpu = self.k.cpus[cpu_index]
        task = self.k.percpu[cpu_index].curr
        if task is None or _in_kernel_stub(cpu, address):
            return                          # not a guest instruction
        ctx = EvalContext(self.k, cpu, task, None)
        hit: CondBreakpoint | None = None
        for bp in self.breakpoints.values():
            if isinstance(bp, CondBreakpoint) and bp.enabled and bp.per_instruction:
                ok = self._eval_cond(bp, ctx, cpu, address)
                if ok is None:
                    cpu.counter.count -= 1      # the instruction at `address` has not executed
                    return
                if ok and not bp.last_true and hit is None:
                    hit = bp
                bp.last_true = ok
        if hit is not None:
            cpu.counter.count -= 1          # the instruction at `address` has not executed
            hit.hits += 1
            self._stop = StopEvent("condition", cpu_index, address, bp=hit)
            cpu.stop()

    def add_watchpoint(self, addr: int, length: int, access: str = "w") -> Watchpoint:
        """Watch guest memory [addr, addr+length) for writes ("w"), reads ("r") or both ("a")."""
        if access not in WATCH_KINDS:
            raise DebugError(f"unknown watchpoint kind {access!r}", hint="w (write), r (read) or a (access)")
        if not 1 <= length <= 1 << 20:
            raise DebugError(f"watchpoint length {length} is not in 1..{1 << 20}")
        if addr < 0 or addr + length > 1 << 64:
            raise DebugError(f"watchpoint address {addr:#x} is out of range")
        wp = Watchpoint(self._new_num(), addr=addr, length=length, access=access)
        self.breakpoints[wp.num] = wp
        self._install_watch(wp)
        return wp

    def _install_watch(self, wp: Watchpoint) -> None:
        from unicorn import UC_HOOK_MEM_READ, UC_HOOK_MEM_WRITE
        kinds = {"w": UC_HOOK_MEM_WRITE, "r": UC_HOOK_MEM_READ, "a": UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE}
        # Unicorn filters on the access's start address: begin early enough to see a wide access
        # (up to a 2048-bit SVE vector) that starts below the range and overlaps it
        lo = max(0, wp.addr - 256)
        hi = wp.addr + wp.length - 1
        self._whooks[wp.num] = [(cpu, cpu.uc.hook_add(kinds[wp.access], self._watch_hook, (cpu.index, wp.num), lo, hi))
                                for cpu in self.k.cpus]

    def _uninstall_watch(self, num: int) -> None:
        for cpu, h in self._whooks.pop(num, []):
            try:
                cpu.uc.hook_del(h)
            except UcError as exc:          # reported: a stale hook would keep firing
                raise DebugError(f"cpu {cpu.index}: could not remove the watchpoint hook: {exc}") from None

    def _watch_hook(self, uc: Any, access: int, address: int, size: int, value: int,
                    data: tuple[int, int]) -> None:
        from unicorn import UC_MEM_WRITE
        cpu_index, num = data
        wp = self.breakpoints.get(num)
        if not isinstance(wp, Watchpoint) or not wp.enabled or self._stop is not None:
            return
        if address + size <= wp.addr or address >= wp.addr + wp.length:
            return
        cpu = self.k.cpus[cpu_index]
        key = (cpu.get_pc(), cpu.counter.count)
        if self._wskip.get(cpu_index) == key:
            del self._wskip[cpu_index]          # the re-execution of the instruction we stopped in
            return
        self._wskip[cpu_index] = key
        cpu.counter.count -= 1                  # the instruction is abandoned and runs again
        wp.hits += 1
        wp.hit_addr = max(address, wp.addr)
        wp.hit_access = "w" if access == UC_MEM_WRITE else "r"
        self._stop = StopEvent("watchpoint", cpu_index, key[0], bp=wp)
        cpu.stop()

    def delete_breakpoint(self, num: int | None) -> list[int]:
        nums = list(self.breakpoints) if num is None else [num]
        for n in nums:
            bp = self.breakpoints.pop(n, None)
            if bp is None:
                raise DebugError(f"no breakpoint number {n}", hint="see `info breakpoints`")
            if isinstance(bp, AddrBreakpoint):
                self._uninstall(bp.addr)
            elif isinstance(bp, Watchpoint):
                self._uninstall_watch(n)
        self._sync_cond_hook()
        return nums

    def _addr_bps(self, addr: int) -> list[AddrBreakpoint]:
        return [b for b in self.breakpoints.values() if isinstance(b, AddrBreakpoint) and b.addr == addr]

    def _install(self, addr: int) -> None:
        if addr in self._hooks:
            return
        from unicorn import UC_HOOK_CODE
        hs = []
        for cpu in self.k.cpus:
            hs.append(cpu.uc.hook_add(UC_HOOK_CODE, self._bp_hook, cpu.index, addr, addr))
        self._hooks[addr] = hs

    def _uninstall(self, addr: int) -> None:
        if self._addr_bps(addr) or addr not in self._hooks:
            return
        from unicorn import UcError
        failed = []
        for cpu, h in zip(self.k.cpus, self._hooks.pop(addr)):
            try:
                cpu.uc.hook_del(h)
            except UcError as exc:
                failed.append(f"cpu {cpu.index}: {exc}")
        if failed:
            # the hook is still installed: the breakpoint would keep firing unseen
            raise DebugError(f"could not remove the code hook of the breakpoint at {addr:#x} ("
                             + "; ".join(failed) + ")", hint="restart the program to drop it")

    def _bp_hook(self, uc: Any, address: int, size: int, cpu_index: int) -> None:
        cpu = self.k.cpus[cpu_index]
        if self._skip.get(cpu_index) == (address, cpu.counter.count):
            del self._skip[cpu_index]
            return
        bps = [b for b in self._addr_bps(address) if b.enabled]
        if not bps or self._stop is not None:
            return
        cpu.counter.count -= 1            # the instruction has not executed: un-count it
        for b in bps:
            b.hits += 1
        self._stop = StopEvent("breakpoint", cpu_index, address, bp=bps[0])
        cpu.stop()

    # ---- trap hooks ------------------------------------------------------------------------------------
    def _ctx(self, trap: Trap | None, cpu: Any = None, task: Any = None) -> EvalContext:
        cpu = cpu if cpu is not None else self.cpu
        if task is None:
            task = self.k.percpu[cpu.index].curr
        return EvalContext(self.k, cpu, task, trap)

    def snapshot(self, cpu: Any, task: Any, trap: Trap | None = None) -> dict[str, Any]:
        from emukern.debug.conditions import lookup
        ctx = EvalContext(self.k, cpu, task, trap)
        out = {}
        for name in WATCH_VARIABLES:
            v = lookup(name, ctx)
            if v is not None:
                out[name] = v
        return out

    def classify(self, cpu: Any, trap: Trap) -> set[str]:
        """The names `break trap ...` can match for this trap (computed at entry)."""
        kind = trap.kind.value
        classes = {kind}
        if trap.kind is not TrapKind.TIMER:
            classes.add("any")
        if self.arch == "riscv64":
            if trap.kind is TrapKind.ILLEGAL and trap.insn is not None and trap.insn_size == 4 \
                    and getattr(cpu, "vs", None) == 0 and getattr(cpu, "rvv", None) is not None:
                from emukern.machine.rvv import is_vector_insn
                if is_vector_insn(trap.insn):
                    classes.add("first-use")
        else:
            if trap.kind is TrapKind.SVE_ACCESS:
                classes.add("first-use")
            if trap.kind in (TrapKind.ILLEGAL, TrapKind.SYSREG) and trap.insn is not None:
                from emukern.machine.cpu_arm64 import decode_sysreg_insn
                d = decode_sysreg_insn(trap.insn)
                if d is not None and d[6]:
                    classes.add("mrs")
        return classes

    def _syscall_at_entry(self, cpu: Any, trap: Trap) -> tuple[int, str] | None:
        if trap.kind is not TrapKind.SYSCALL:
            return None
        try:
            nr = self.k.arch.syscall_nr(cpu)
            return nr, syscalls_table.syscall_name(self.k, nr)
        except UcError:                 # the CPU's registers are not readable now
            return None

    def _make_info(self, cpu: Any, task: Any, trap: Trap) -> TrapInfo:
        if self.last_trap is not None and self.last_trap.trap is trap:
            return self.last_trap
        from emukern.debug.views import disasm_at, predict_handler
        self.trap_seq += 1
        info = TrapInfo(trap=trap, cpu=cpu.index, tid=getattr(task, "tid", 0),
                        classes=self.classify(cpu, trap), predicted=predict_handler(self, cpu, trap),
                        disasm=disasm_at(self, trap.pc, task.mm if task is not None else None, trap.insn_size),
                        before=self.snapshot(cpu, task, trap), seq=self.trap_seq)
        sc = self._syscall_at_entry(cpu, trap)
        if sc is not None:
            if info.trap.extra is None:
                info.trap.extra = {}
            info.trap.extra.setdefault("debug_syscall", sc)
        self.last_trap = info
        return info

    def _matches(self, bp: TrapBreakpoint, info: TrapInfo) -> bool:
        if not bp.enabled or bp.what not in info.classes:
            return False
        if bp.arg is None:
            return True
        sc = (info.trap.extra or {}).get("debug_syscall")
        if sc is None:
            return False
        nr, name = sc
        try:
            return int(bp.arg, 0) == nr
        except ValueError:
            return bp.arg == name

    def _gate(self, cpu: Any, task: Any, trap: Trap) -> bool:
        """Kernel.trap_gate: True = stop before the handler runs."""
        info = self._make_info(cpu, task, trap)
        if self._stop is not None:
            return True                       # already stopping (e.g. a breakpoint on another CPU)
        if self._stepping_cpu == cpu.index:
            self._stop = StopEvent("trap-entry", cpu.index, trap.pc, info=info)
            return True
        for bp in self.breakpoints.values():
            if isinstance(bp, TrapBreakpoint) and bp.phase == "entry" and self._matches(bp, info):
                bp.hits += 1
                self._stop = StopEvent("trap-entry", cpu.index, trap.pc, bp=bp, info=info)
                return True
        return False

    def _listener(self, phase: str, cpu: Any, task: Any, trap: Trap) -> None:
        if phase == "enter":
            self._make_info(cpu, task, trap)
            return
        info = self._make_info(cpu, task, trap) if (self.last_trap is None or self.last_trap.trap is not trap) \
            else self.last_trap
        info.done = True
        info.after = self.snapshot(cpu, task, trap)
        if "mrs" in info.classes and trap.insn is not None and task is not None and task.alive \
                and cpu.get_pc() == trap.pc + 4:
            # the handler emulated the read and stepped over it: Rt holds what the program got
            from emukern.machine.cpu_arm64 import decode_sysreg_insn
            d = decode_sysreg_insn(trap.insn)
            if d is not None and d[6]:
                info.mrs_result = (d[5], cpu.reg(d[5]) if d[5] != 31 else 0)
        if trap.kind is not TrapKind.TIMER or self._show_timers:
            if self.echo_traps or len(self._handled) < QUIET_KEEP:
                self._handled.append(info)
            else:
                self.handled_quiet += 1     # `set echo off`: counted, not kept (a long continue)
        if self._stop is not None:
            return
        for bp in self.breakpoints.values():
            if isinstance(bp, TrapBreakpoint) and bp.phase == "exit" and self._matches(bp, info):
                bp.hits += 1
                self._stop = StopEvent("trap-exit", cpu.index, cpu.get_pc(), bp=bp, info=info)
                cpu.stop()
                return
        ctx = EvalContext(self.k, cpu, task, trap)
        hit: CondBreakpoint | None = None
        for bp in self.breakpoints.values():
            if isinstance(bp, CondBreakpoint) and bp.cond is not None and bp.enabled:
                ok = self._eval_cond(bp, ctx, cpu, cpu.get_pc(), info)
                if ok is None:
                    return                  # the condition raised: stopped with the error
                # a condition also checked at instructions stops when it becomes true (it may have
                # been true since an instruction before this trap); a trap-time one at every trap
                rose = ok and (not bp.per_instruction or not bp.last_true)
                bp.last_true = ok
                if rose and hit is None:
                    hit = bp
        if hit is not None:
            hit.hits += 1
            self._stop = StopEvent("condition", cpu.index, cpu.get_pc(), bp=hit, info=info)
            cpu.stop()

    _show_timers = False
    # `set echo on|off` (commands.py): whether a stop lists every trap handled since the resume;
    # off, only the first QUIET_KEEP are kept (a step still shows its own) and the rest counted
    echo_traps = True
    handled_quiet = 0

    # ---- run control ------------------------------------------------------------------------------------
    def _check_running(self) -> None:
        if self.finished:
            raise DebugError("the program is not being run", hint="use `run` or `restart` to start it again")

    def _set_finished(self) -> StopEvent:
        self.finished = True
        from emukern.kernel.result import RunResult
        try:
            r = RunResult.from_kernel(self.k)
            msg = f"program exited with status {r.exit_status}"
            if r.stop_reason not in ("exited",):
                msg += f" ({r.stop_reason}: {r.message})" if r.message else f" ({r.stop_reason})"
            self.exit_status = r.exit_status
            self.exit_signal = r.signal or 0
        except Exception as exc:  # noqa: BLE001 - the run's own report failed on a half-dead machine: say so, no traceback
            msg = f"program finished ({exc})"
            self.exit_status = -1
        self.exit_message = msg
        return StopEvent("exited", self.cur, 0, message=msg)

    def _prepare_resume(self) -> None:
        self._sync_cond_hook()              # `enable`/`disable` may have changed what is needed
        self._stop = None
        self._handled = []
        self.handled_quiet = 0
        self._interrupted = False

    def _resume_pending(self) -> StopEvent | None:
        """Run a deferred trap handler, if one is waiting.  Returns a stop if that ended things."""
        if self.k.deferred_trap is None:
            return None
        cpu = self.k.deferred_trap[0]
        alive = self.k.runloop.resume_trap()
        if self.finished or not alive:
            ev = self._set_finished()
            ev.handled = list(self._handled)
            return ev
        if self._stop is not None:
            ev = self._stop
            self._note_stop(ev)
            ev.handled = list(self._handled)
            return ev
        self.cur = cpu.index if self.k.percpu[cpu.index].curr is not None else self.cur
        return None

    def _drive(self, cap: Callable[[Any], int | None] | None, done: Callable[[], bool] | None,
               stepping_cpu: int | None = None) -> StopEvent:
        """Run scheduler rounds until a stop, the end, or ``done()``."""
        k = self.k
        old = signal.getsignal(signal.SIGINT)
        try:
            signal.signal(signal.SIGINT, self._on_sigint)
        except ValueError:        # not the main thread
            old = None
        self._stepping_cpu = stepping_cpu
        k.run_cap = cap
        rounds = 0
        try:
            while True:
                rounds += 1
                if self.interrupt_check is not None and rounds % 64 == 0 and self.interrupt_check():
                    self._interrupted = True
                if done is not None and done():
                    ev = StopEvent("step", self.cur, self.cpu.get_pc())
                    break
                alive = k.runloop.step_loop(1)
                if self._stop is not None:
                    ev = self._stop
                    if not alive:
                        self._set_finished()
                    break
                if not alive:
                    ev = self._set_finished()
                    break
                if self._interrupted:
                    ev = StopEvent("interrupted", self.cur, self.cpu.get_pc(), message="interrupted")
                    break
        finally:
            k.run_cap = None
            self._stepping_cpu = None
            if old is not None:
                try:
                    signal.signal(signal.SIGINT, old)
                except ValueError:
                    pass
        self._note_stop(ev)
        ev.handled = list(self._handled)
        return ev

    def _init_alive(self) -> bool:
        try:
            return bool(self.k.runloop.init_alive())
        except Exception:  # noqa: BLE001 - asked while the machine is being torn down: not alive
            return False

    def _on_sigint(self, signum: int, frame: Any) -> None:
        self._interrupted = True

    def _note_stop(self, ev: StopEvent) -> None:
        if ev.reason != "exited":
            if self.k.percpu[ev.cpu].curr is not None or self.k.deferred_trap is not None:
                self.cur = ev.cpu
            cpu = self.k.cpus[self.cur]
            ev.pc = cpu.get_pc()
        if ev.reason == "breakpoint":
            cpu = self.k.cpus[ev.cpu]
            self._skip[ev.cpu] = (ev.pc, cpu.counter.count + 1)
        if ev.bp is not None and ev.bp.temporary:
            try:
                self.delete_breakpoint(ev.bp.num)
            except DebugError:
                pass

    def _arm_skip(self) -> None:
        """Resuming from a breakpoint stop must execute that instruction, not hit it again."""
        for i, (pc, count) in list(self._skip.items()):
            cpu = self.k.cpus[i]
            if cpu.get_pc() != pc or cpu.counter.count + 1 != count:
                del self._skip[i]

    def cont(self) -> StopEvent:
        self._check_running()
        self._prepare_resume()
        ev = self._resume_pending()
        if ev is not None:
            return ev
        self._arm_skip()
        return self._drive(None, None)

    def stepi(self, n: int = 1) -> StopEvent:
        """Execute ``n`` guest instructions on the current CPU; stop early at a trap entry."""
        self._check_running()
        if n <= 0:
            raise DebugError("stepi needs a positive count")
        self._prepare_resume()
        ev = self._resume_pending()
        if ev is not None:
            return ev
        self._arm_skip()
        cpu = self.cpu
        start = cpu.user_insns
        idx = cpu.index

        def cap(c: Any) -> int | None:
            if c.index != idx:
                return None
            return c.now + max(0, n - (c.user_insns - start))

        def done() -> bool:
            return cpu.user_insns - start >= n

        ev = self._drive(cap, done, stepping_cpu=idx)
        ev.message = ev.message or f"{cpu.user_insns - start} instruction(s)"
        return ev

    def step(self) -> StopEvent:
        """One guest instruction including the kernel's handling of a trap it raises (and, for a
        trap whose instruction re-executes -- first use, SVE access -- that re-execution)."""
        self._check_running()
        handled: list[TrapInfo] = []
        ev: StopEvent | None = None
        for _ in range(4):
            if self.k.deferred_trap is not None:
                trap_pc = self.k.deferred_trap[1].pc
                pending = self.pending_trap
                self._prepare_resume()
                r = self._resume_pending()
                handled += self._handled
                if r is not None:
                    r.handled = handled
                    return r
                if self.task() is None or self.cpu.get_pc() != trap_pc:
                    ev = StopEvent("step", self.cur, self.cpu.get_pc(), info=pending)
                    break
                # the trapping instruction re-executes: step it
            ev = self.stepi(1)
            handled += ev.handled
            if ev.reason != "trap-entry":
                break
        assert ev is not None
        ev.handled = handled
        return ev

    def finish(self) -> StopEvent:
        """Run the pending kernel handler to its end."""
        self._check_running()
        if self.k.deferred_trap is None:
            raise DebugError("not stopped in a kernel handler",
                             hint="stop at a trap first (`break trap any`, or `stepi` onto a trapping instruction)")
        pending = self.pending_trap
        self._prepare_resume()
        ev = self._resume_pending()
        if ev is not None:
            return ev
        ev = StopEvent("finish", self.cur, self.cpu.get_pc(), info=pending or self.last_trap)
        ev.handled = list(self._handled)
        return ev

    def until(self, text: str) -> StopEvent:
        self._check_running()
        bp = self.add_addr_breakpoint(text, temporary=True)
        try:
            ev = self.cont()
        finally:
            if bp.num in self.breakpoints:
                self.delete_breakpoint(bp.num)
        if ev.bp is bp:
            ev.reason = "until"
        return ev

    def remember_setting(self, kind: str, key: str, value: str) -> None:
        """Record a `sysctl KEY VALUE` / `policy NAME VALUE` made at the prompt (latest wins)."""
        self.prompt_settings = [t for t in self.prompt_settings if t[:2] != (kind, key)]
        self.prompt_settings.append((kind, key, value))

    def restart(self) -> list[str]:
        """Reload the program; re-apply the prompt's sysctl/policy changes.  Returns them as
        ``KIND KEY=VALUE`` strings (so the caller can say what was kept)."""
        self.start()
        kept = []
        for kind, key, value in self.prompt_settings:
            if kind == "sysctl":
                self.k.sysctl.write(key, value)
            else:
                self.k.policies.set(key, value)
            kept.append(f"{kind} {key}={value}")
        return kept

    def detach_run(self) -> None:
        """Drop every stop (used by the gdb stub on detach): run the program to its end."""
        self.k.trap_gate = None
        self.breakpoints.clear()
        for addr in list(self._hooks):
            self._uninstall(addr)
        for num in list(self._whooks):
            self._uninstall_watch(num)
        self._sync_cond_hook()
        if self.k.deferred_trap is not None:
            self.k.runloop.resume_trap()
        if not self.finished:
            self.k.runloop.run()
