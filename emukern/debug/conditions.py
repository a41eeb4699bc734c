"""The condition language of ``break when``: a tiny expression language over kernel state,
evaluated after every trap the kernel handles (and after every timer tick).

    break when tif_sve-changes              # a variable changed since the last evaluation
    break when vs=Dirty                     # = and == are the same; != < <= > >= too
    break when jiffies>sve_timeout          # both sides may be variables
    break when syscall=write and a0>0       # and / or / not, parentheses
    break when sysctl.abi.riscv_v_vstate_discard=1

Values are integers (``0x..`` allowed) or words compared case-insensitively (``Dirty``, ``true``).
A variable that does not exist on this machine (e.g. ``vs`` on arm64, ``sve_timeout`` before the
SVE timeout is modelled) evaluates to None and makes its comparison false.

Variables live in a registry: :func:`register_variable` adds one (``fn(ctx) -> value``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from emukern.debug.errors import DebugError
from emukern.kernel.errno import NAMES as ERRNO_NAMES
from emukern.kernel.thread_info import ARCH_FLAGS, TIF_FLAGS, TIF_RISCV_V_DEFER_RESTORE
from emukern.machine.trap import Trap


@dataclass
class EvalContext:
    """What a variable can look at: the kernel, the CPU the trap was on, its task, the trap."""
    kernel: Any
    cpu: Any
    task: Any
    trap: Any = None


@dataclass
class Variable:
    name: str
    fn: Callable[[EvalContext], Any]
    help: str


VARIABLES: dict[str, Variable] = {}


def register_variable(name: str, fn: Callable[[EvalContext], Any], help: str = "") -> None:
    """Make ``name`` usable in ``break when`` conditions (later registrations win)."""
    VARIABLES[name.lower()] = Variable(name.lower(), fn, help)


def _thread_attr(*names: str, arch: str | None = None) -> Callable[[EvalContext], Any]:
    def get(ctx: EvalContext) -> Any:
        if arch is not None and getattr(ctx.cpu, "arch", arch) != arch:
            return None
        th = getattr(ctx.task, "thread", None)
        for n in names:
            for holder in (th, getattr(th, "v", None), getattr(th, "fpsimd_state", None)):
                if holder is not None and hasattr(holder, n):
                    return getattr(holder, n)
        return None
    return get


def _vs(ctx: EvalContext) -> Any:
    vs = getattr(ctx.cpu, "vs", None)
    if vs is None:
        return None
    from emukern.machine.cpu_riscv import VS_NAMES
    return VS_NAMES.get(vs, vs)


def _sve_timeout(ctx: EvalContext) -> Any:
    for holder in (getattr(ctx.task, "thread", None), ctx.task, ctx.kernel):
        v = getattr(holder, "sve_timeout", None)
        if v is not None:
            return v
    return None


def _trap_attr(attr: str) -> Callable[[EvalContext], Any]:
    def get(ctx: EvalContext) -> Any:
        t = ctx.trap
        if t is None:
            return None
        v = getattr(t, attr, None)
        return v.value if hasattr(v, "value") else v
    return get


def _syscall(ctx: EvalContext) -> Any:
    t = ctx.trap
    if t is None or getattr(getattr(t, "kind", None), "value", None) != "syscall":
        return None
    return t.handler or None


def _tif(name: str, bit: int) -> Callable[[EvalContext], Any]:
    """A thread flag of the current task's flags word; no value for a flag its arch does not use."""
    def get(ctx: EvalContext) -> Any:
        if ctx.task is None or name not in ARCH_FLAGS.get(ctx.kernel.config.arch, ()):
            return None
        return bool(ctx.task.flags & bit)
    return get


register_variable("vs", _vs, "RISC-V sstatus.VS of the CPU (Off/Initial/Clean/Dirty)")
# every TIF_* flag of kernel/thread_info.py, by its Linux name (break when TIF_SVE, tif_sve-changes)
for _name, _bit in TIF_FLAGS.items():
    if any(_name in names for names in ARCH_FLAGS.values()):
        _arches = "/".join(a for a, names in ARCH_FLAGS.items() if _name in names)
        register_variable(_name, _tif(_name, _bit), f"{_name} of the task's thread flags ({_arches})")
register_variable("thread_flags", lambda c: None if c.task is None else c.task.flags,
                  "the task's whole thread_info flags word")
register_variable("defer_restore", _tif("TIF_RISCV_V_DEFER_RESTORE", TIF_RISCV_V_DEFER_RESTORE),
                  "alias of TIF_RISCV_V_DEFER_RESTORE")
register_variable("sve_timeout", _sve_timeout, "arm64 sve_timeout in jiffies (when modelled)")
register_variable("sve_vl", _thread_attr("vl", arch="arm64"), "arm64 task SVE vector length (bits)")
register_variable("sve_el0", lambda c: getattr(c.cpu, "sve_el0", None), "arm64 CPACR_EL1.ZEN lets EL0 use SVE")
register_variable("jiffies", lambda c: c.kernel.clock.jiffies(c.cpu.now), "jiffies on the trap's CPU")
register_variable("cycles", lambda c: c.cpu.now, "the CPU's local clock (cycles)")
register_variable("insns", lambda c: c.cpu.user_insns, "user instructions retired on the CPU")
register_variable("pc", lambda c: c.cpu.get_pc(), "program counter")
register_variable("cpu", lambda c: c.cpu.index, "CPU index")
register_variable("tid", lambda c: getattr(c.task, "tid", None), "current task id")
register_variable("trap", _trap_attr("kind"), "kind of the trap just handled (syscall, illegal, ...)")
register_variable("handler", _trap_attr("handler"), "handler of the trap just handled")
def decision_of(trap: Any) -> str:
    """The handler's decision (a syscall's is its return value, an error by its errno name) plus
    what the entry/exit work decided, e.g. the deferred vstate discard (``Trap.describe``)."""
    if isinstance(trap, Trap):
        return trap.describe(ERRNO_NAMES)
    describe = getattr(trap, "describe", None)
    return describe() if describe is not None else (getattr(trap, "decision", "") or "")


def _decision(ctx: EvalContext) -> Any:
    if ctx.trap is None:
        return None
    return decision_of(ctx.trap)


register_variable("decision", _decision, "decision text of the trap just handled")
register_variable("trap_cycles", _trap_attr("cycles"), "cycles the trap just handled cost")
register_variable("syscall", _syscall, "name of the syscall just handled")
register_variable("traps", lambda c: sum(c.kernel.trap_counts.values()), "traps taken so far")


def lookup(name: str, ctx: EvalContext) -> Any:
    n = name.lower()
    var = VARIABLES.get(n)
    if var is not None:
        try:
            return var.fn(ctx)
        except (AttributeError, KeyError, IndexError):
            # the variable does not exist in this state (no trap yet, no vector context, the
            # other arch's flag): it has no value, so a comparison with it is false.  Any other
            # exception is an error the debugger reports (engine: "error" stop).
            return None
    if n.startswith("sysctl."):
        e = ctx.kernel.sysctl.entries.get(name[7:])
        return None if e is None else e.value
    if n.startswith("policy."):
        return ctx.kernel.policies.values.get(name[7:])
    if n.startswith("trap_count."):
        return ctx.kernel.trap_counts.get(name[11:], 0)
    from emukern.debug.regs import read_register
    try:
        return read_register(ctx.cpu, n)
    except DebugError:
        return None


# variables the kernel changes only while it handles a trap (or a tick): checking them after each
# trap sees every change.  Everything else a condition can read -- registers, pc, vs (the vector
# unit sets VS=Dirty when an instruction writes a vector register), cycles, insns -- changes at
# guest instructions, so a condition that reads one is also checked before every instruction.
TRAP_TIME_VARIABLES = {"defer_restore", "thread_flags", *(n.lower() for n in TIF_FLAGS),
                       "sve_timeout", "sve_vl", "sve_el0", "jiffies", "cpu", "tid", "trap", "handler",
                       "decision", "trap_cycles", "syscall", "traps"}


def per_instruction_name(name: str) -> bool:
    """True if ``name`` can change at a guest instruction, not only inside a trap handler."""
    n = name.lower()
    return not (n in TRAP_TIME_VARIABLES or n.startswith(("sysctl.", "policy.", "trap_count.")))


def known_name(name: str, kernel: Any, cpu: Any) -> bool:
    n = name.lower()
    if n in VARIABLES or n.startswith(("policy.", "trap_count.")):
        return True
    if n.startswith("sysctl."):
        return name[7:] in kernel.sysctl.entries
    from emukern.debug.regs import register_names
    return n in register_names(cpu)


# ---- parsing ----------------------------------------------------------------------------------
_TOKEN = re.compile(r"\s*(?:(?P<op><=|>=|==|!=|=|<|>|\(|\))|(?P<word>[A-Za-z_$][\w.$]*(?:-changes)?|"
                    r"-?0[xX][0-9a-fA-F]+|-?\d+|[\w.+-]+))")
_OPS = {"=": lambda a, b: a == b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
        "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def _literal(text: str) -> Any:
    try:
        return int(text, 0)
    except ValueError:
        low = text.lower()
        if low == "true":
            return True
        if low == "false":
            return False
        return text


def _norm(v: Any) -> Any:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, str):
        try:
            return int(v, 0)
        except ValueError:
            return v.lower()
    return v


class Node:
    def eval(self, ctx: EvalContext, memo: dict[str, Any]) -> bool:
        raise NotImplementedError


@dataclass
class Operand:
    text: str
    is_var: bool

    def value(self, ctx: EvalContext) -> Any:
        return lookup(self.text, ctx) if self.is_var else _literal(self.text)


@dataclass
class Compare(Node):
    left: Operand
    op: str
    right: Operand

    def eval(self, ctx: EvalContext, memo: dict[str, Any]) -> bool:
        a, b = _norm(self.left.value(ctx)), _norm(self.right.value(ctx))
        if a is None or b is None:
            return False
        try:
            return bool(_OPS[self.op](a, b))
        except TypeError:
            return bool(_OPS[self.op](str(a), str(b))) if self.op in ("=", "==", "!=") else False


@dataclass
class Changes(Node):
    name: str

    def eval(self, ctx: EvalContext, memo: dict[str, Any]) -> bool:
        now = lookup(self.name, ctx)
        key = f"changes:{self.name}"
        first = key not in memo
        before = memo.get(key)
        memo[key] = now
        return not first and now != before


@dataclass
class Truthy(Node):
    name: str

    def eval(self, ctx: EvalContext, memo: dict[str, Any]) -> bool:
        v = lookup(self.name, ctx)
        return bool(v) and v not in ("Off", "off")


@dataclass
class BoolOp(Node):
    op: str
    items: list[Node]

    def eval(self, ctx: EvalContext, memo: dict[str, Any]) -> bool:
        # evaluate every operand so each `-changes` memo stays current
        vals = [n.eval(ctx, memo) for n in self.items]
        return all(vals) if self.op == "and" else any(vals)


@dataclass
class Not(Node):
    item: Node

    def eval(self, ctx: EvalContext, memo: dict[str, Any]) -> bool:
        return not self.item.eval(ctx, memo)


# limits on a condition: it is parsed and evaluated recursively, and the text may come from a
# remote gdb (`monitor break when ...`), so nesting and length are bounded with a clear error
# instead of a RecursionError (or minutes of work) inside the server
MAX_CONDITION_DEPTH = 32
MAX_CONDITION_LENGTH = 4096


class Condition:
    """A compiled ``break when`` expression with its own memory (for ``-changes``)."""

    def __init__(self, text: str, kernel: Any, cpu: Any) -> None:
        self.text = text.strip()
        if not self.text:
            raise DebugError("empty condition", hint="e.g. break when vs=Dirty")
        if len(self.text) > MAX_CONDITION_LENGTH:
            raise DebugError(f"condition too long ({len(self.text)} characters, at most {MAX_CONDITION_LENGTH})")
        self._kernel, self._cpu = kernel, cpu
        self.tokens = self._tokenize(self.text)
        self.pos = 0
        self.depth = 0
        self.names: set[str] = set()          # the variables it reads
        self.root = self._parse_or()
        if self.pos != len(self.tokens):
            raise DebugError(f"unexpected {self.tokens[self.pos]!r} in condition {self.text!r}")
        self.memo: dict[str, Any] = {}

    @property
    def per_instruction(self) -> bool:
        """It reads state a guest instruction can change: check it before every instruction."""
        return any(per_instruction_name(n) for n in self.names)

    def prime(self, ctx: EvalContext) -> None:
        """Remember current values so that `-changes` fires on the next change, not the first look."""
        self.root.eval(ctx, self.memo)

    def evaluate(self, ctx: EvalContext) -> bool:
        return self.root.eval(ctx, self.memo)

    # -- recursive descent
    @staticmethod
    def _tokenize(text: str) -> list[str]:
        out, pos = [], 0
        while pos < len(text):
            if text[pos].isspace():
                pos += 1
                continue
            m = _TOKEN.match(text, pos)
            if m is None or m.end() == pos:
                raise DebugError(f"cannot parse condition at {text[pos:]!r}")
            out.append(m.group("op") or m.group("word"))
            pos = m.end()
        return out

    def _peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _next(self) -> str:
        t = self._peek()
        if t is None:
            raise DebugError(f"condition {self.text!r} ends too early")
        self.pos += 1
        return t

    def _parse_or(self) -> Node:
        items = [self._parse_and()]
        while (self._peek() or "").lower() in ("or", "||"):
            self.pos += 1
            items.append(self._parse_and())
        return items[0] if len(items) == 1 else BoolOp("or", items)

    def _parse_and(self) -> Node:
        items = [self._parse_not()]
        while (self._peek() or "").lower() in ("and", "&&"):
            self.pos += 1
            items.append(self._parse_not())
        return items[0] if len(items) == 1 else BoolOp("and", items)

    def _nest(self) -> None:
        self.depth += 1
        if self.depth > MAX_CONDITION_DEPTH:
            raise DebugError(f"condition nested too deeply (more than {MAX_CONDITION_DEPTH} levels of "
                             "parentheses / not)", hint="simplify it: and/or chains need no parentheses")

    def _parse_not(self) -> Node:
        if (self._peek() or "").lower() in ("not", "!"):
            self.pos += 1
            self._nest()
            node = Not(self._parse_not())
            self.depth -= 1
            return node
        return self._parse_atom()

    def _check_var(self, name: str) -> None:
        self.names.add(name.lower())
        if not known_name(name, self._kernel, self._cpu):
            raise DebugError(f"unknown variable {name!r} in condition",
                             hint="variables: " + ", ".join(sorted(VARIABLES)) +
                             ", sysctl.KEY, policy.NAME, trap_count.KIND, register names")

    def _operand(self, tok: str) -> Operand:
        if re.fullmatch(r"-?(0[xX][0-9a-fA-F]+|\d+)", tok):
            return Operand(tok, False)
        if known_name(tok, self._kernel, self._cpu):
            self.names.add(tok.lower())
            return Operand(tok, True)
        return Operand(tok, False)        # a word literal, e.g. Dirty

    def _parse_atom(self) -> Node:
        tok = self._next()
        if tok == "(":
            self._nest()
            node = self._parse_or()
            self.depth -= 1
            if self._peek() != ")":
                raise DebugError(f"missing ')' in condition {self.text!r}")
            self.pos += 1
            return node
        if tok in _OPS or tok == ")":
            raise DebugError(f"unexpected {tok!r} in condition {self.text!r}")
        low = tok.lower()
        if low.endswith("-changes"):
            name = tok[: -len("-changes")]
            self._check_var(name)
            return Changes(name)
        nxt = self._peek()
        if nxt is not None and nxt.lower() == "changes":
            self.pos += 1
            self._check_var(tok)
            return Changes(tok)
        if nxt in _OPS:
            op = self._next()
            right_tok = self._next()
            left = self._operand(tok)
            if not left.is_var:
                right_is = self._operand(right_tok)
                if not right_is.is_var:
                    self._check_var(tok)
            right = self._operand(right_tok)
            return Compare(left, op, right)
        self._check_var(tok)
        return Truthy(tok)
