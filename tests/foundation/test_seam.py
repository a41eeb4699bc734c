"""Issue 17, "the seam between hardware and kernel": machine/ is hardware only, the kernel reaches
it through a small public API.  These read the source, so a regression fails here by name."""
from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

import emukern

ROOT = Path(emukern.__file__).parent


def _imports(path: Path) -> set[str]:
    """Every module a file imports (at the top or inside a function)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
    return out


def test_machine_imports_nothing_from_the_kernel():
    bad = {str(p.relative_to(ROOT)): sorted(m for m in _imports(p) if m.startswith("emukern.kernel"))
           for p in (ROOT / "machine").rglob("*.py")}
    assert {p: m for p, m in bad.items() if m} == {}


def test_kernel_code_and_data_live_in_the_kernel():
    # the kernel-path cost table and the arm64 entry-fpsimd sequences / sve_state storage
    assert importlib.util.find_spec("emukern.machine.cost") is None
    from emukern.kernel import cost
    assert {"exception_entry", "schedule", "switch_to", "sve_access_trap"} <= set(cost.DEFAULT_COSTS)
    from emukern.machine import cpu_arm64
    for name in ("STUB_WORDS", "STUB_TEXT", "SveStateArea", "build_stub_words", "enc_str_z"):
        assert not hasattr(cpu_arm64, name), name
    from emukern.kernel.arch.arm64 import entry_fpsimd
    assert set(entry_fpsimd.STUB_WORDS) == {"sve_save_state", "sve_load_state", "sve_flush_live",
                                            "sve_flush_p", "fpsimd_save_state", "fpsimd_load_state"}


# ---- item 2: a small public machine API for what the kernel needs -----------------------------
import re

_PRIVATE_ON_CPU = re.compile(r"\b(?:cpu|c|pcpu|cpus\[[^\]]*\]|self\.cpu|dbg\.cpu)\._[a-z]\w*")


def _sources(*dirs: str):
    for d in dirs:
        for p in sorted((ROOT / d).rglob("*.py")):
            yield p, p.read_text()


def test_kernel_and_debugger_use_no_private_cpu_attributes():
    hits = [f"{p.relative_to(ROOT)}:{n}: {m.group(0)}" for p, text in _sources("kernel", "debug")
            for n, line in enumerate(text.splitlines(), 1) for m in _PRIVATE_ON_CPU.finditer(line)]
    assert hits == []


def test_kernel_charges_time_only_through_cpu_charge():
    # no cpu.sys_cycles/extra_user/idle_cycles arithmetic beside Cpu.charge(), no counter struct
    pat = re.compile(r"\.(?:sys_cycles|extra_user|idle_cycles|stub_insns)\s*[-+]?=(?!=)|\._cs\b|\.counter\.(?:count|deadline)\s*[-+]?=")
    hits = [f"{p.relative_to(ROOT)}:{n}" for p, text in _sources("kernel")
            for n, line in enumerate(text.splitlines(), 1) if pat.search(line)]
    assert hits == []


def test_kernel_creates_no_unicorn_instance():
    pat = re.compile(r"\bUc\(")
    hits = [str(p.relative_to(ROOT)) for p, text in _sources("kernel") if pat.search(text)]
    assert hits == []


# ---- item 7: a Linux change's policy is read where its hunks are, not interleaved -------------
def _function_source(path: Path, name: str) -> str:
    tree = ast.parse(path.read_text())
    fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name)
    return ast.get_source_segment(path.read_text(), fn) or ""


def test_task_fpsimd_load_reads_the_sve_policy_once():
    # two blocks (before / after "arm64/sve: Performance improvements with SVE state saving"),
    # chosen by one read of the switch -- not a legacy/p1 test in each of four ifs
    src = _function_source(ROOT / "kernel" / "arch" / "arm64" / "fpsimd.py", "task_fpsimd_load")
    assert src.count("_pol(k)") == 1 and src.count('"legacy"') == 1


# ---- item 6: the debugger asks the arch which handler a trap goes to --------------------------
def test_debugger_has_no_copy_of_the_arch_dispatch_table():
    names = ("do_el0_undef", "do_el0_sys", "do_sve_acc", "do_el0_brk", "do_trap_insn_illegal",
             "do_trap_break", "do_page_fault", "riscv_v_first_use_handler")
    hits = [f"{p.relative_to(ROOT)}: {n}" for p, text in _sources("debug") for n in names
            if f'"{n}' in text or f"'{n}" in text]
    assert hits == []


def test_arch_tables_name_the_handlers_the_kernel_logs():
    from emukern.kernel.arch.arm64.arch import Arm64Arch
    from emukern.kernel.arch.riscv.arch import RiscvArch
    from emukern.machine.trap import TrapKind
    assert Arm64Arch.TRAP_HANDLERS[TrapKind.SVE_ACCESS] == "do_sve_acc"
    assert RiscvArch.TRAP_HANDLERS[TrapKind.ILLEGAL] == "do_trap_insn_illegal"
    for arch in (Arm64Arch, RiscvArch):
        assert {TrapKind.ILLEGAL, TrapKind.MEM_FAULT, TrapKind.BREAKPOINT} <= set(arch.TRAP_HANDLERS)


# ---- item 5: the scheduler and the run loop are owned objects; no import cycles ---------------
def _import_graph(package: str) -> dict[str, set[str]]:
    """module -> the emukern modules it imports anywhere (functions included, TYPE_CHECKING
    blocks excluded: those never run)."""
    mods = {}
    for p in ROOT.rglob("*.py"):
        parts = ("emukern",) + p.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = p

    def walk(node: ast.AST):
        for ch in ast.iter_child_nodes(node):
            if isinstance(ch, ast.If) and "TYPE_CHECKING" in ast.dump(ch.test):
                continue
            yield ch
            yield from walk(ch)

    graph: dict[str, set[str]] = {}
    for name, p in mods.items():
        if not name.startswith(package):
            continue
        out: set[str] = set()
        pkg = name if p.name == "__init__.py" else name.rpartition(".")[0]
        for n in walk(ast.parse(p.read_text())):
            targets = []
            if isinstance(n, ast.Import):
                targets = [a.name for a in n.names]
            elif isinstance(n, ast.ImportFrom):
                base = n.module or ""
                if n.level:
                    base = ".".join(pkg.split(".")[:len(pkg.split(".")) - n.level + 1] + ([base] if base else []))
                targets = [base] + [f"{base}.{a.name}" for a in n.names]
            for t in targets:
                while t and t not in mods:
                    t = t.rpartition(".")[0]
                if t.startswith(package) and t != name:
                    out.add(t)
        graph[name] = out
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(comp)
    for v in list(graph):
        if v not in index:
            visit(v)
    return found


# kernel/signal.py and the arch signal files are being split by another change: the generic code
# picks the arch's frame code (and arm64's uses a RISC-V helper); that family is the only cycle
# left, and it may only shrink

def _package(module: str) -> str:
    path = ROOT.parent / (module.replace(".", "/") + ".py")
    return module.rsplit(".", 1)[0] if path.exists() else module


def test_no_import_cycle_in_the_kernel_and_machine_spans_packages():
    # free functions that call each other import each other: a cycle inside one package (the
    # signal code and exit, two syscall files) is how Linux's own files relate; one that runs
    # across packages would mean a lower layer reaching up (it goes through ``k`` instead)
    cycles = _cycles(_import_graph("emukern.kernel")) + _cycles(_import_graph("emukern.machine"))
    assert [sorted(c) for c in cycles if len({_package(m) for m in c}) > 1] == []
    sched_deps = _import_graph("emukern.kernel")["emukern.kernel.sched"]
    assert "emukern.kernel.syscalls" not in sched_deps and "emukern.kernel.kernel" not in sched_deps


def test_debugger_views_and_conditions_do_not_import_each_other_both_ways():
    g = _import_graph("emukern.debug")
    assert not ("emukern.debug.views" in g["emukern.debug.conditions"]
                and "emukern.debug.conditions" in g["emukern.debug.views"])


@pytest.mark.parametrize("module", [
    "emukern.kernel.sched", "emukern.kernel.smp", "emukern.kernel.syscalls", "emukern.kernel.fs.poll", 
    "emukern.kernel.signal", "emukern.kernel.exec", "emukern.kernel.policies", "emukern.kernel.plugins",
    "emukern.kernel.task", "emukern.kernel.thread_info", "emukern.kernel.cost", "emukern.kernel.sysret",
    "emukern.kernel.arch.arm64.fpsimd", "emukern.kernel.arch.arm64.entry_fpsimd", "emukern.kernel.arch.riscv.vector",
    "emukern.machine.cpu_arm64", "emukern.debug.views", "emukern.debug.conditions"])
def test_each_module_imports_alone(module):
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True,
                       cwd=ROOT.parent, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]


def test_kernel_owns_scheduler_and_run_loop_objects():
    from emukern.kernel import kernel as K
    from emukern.kernel.sched import Scheduler
    from emukern.kernel.smp import RunLoop
    bases = {b.__name__ for b in K.Kernel.__mro__}
    assert "SchedulerMixin" not in bases and "RunLoopMixin" not in bases
    from emukern.config import MachineConfig
    k = K.Kernel(MachineConfig(arch="riscv64"))
    assert isinstance(k.sched, Scheduler) and isinstance(k.runloop, RunLoop)
    assert k.sched.percpu is k.percpu and k.runloop.k is k


def test_no_type_ignore_attr_defined_in_the_seam_files():
    # kernel state hung on CPU/Kernel/Task objects used to need these; everything is declared
    files = ["kernel/kernel.py", "kernel/sched.py", "kernel/smp.py", "kernel/task.py", "kernel/syscalls/table.py",
             "kernel/entry.py", "kernel/uapi.py", "kernel/fs/poll.py", "kernel/exec.py",
             "kernel/fs/vfs.py", "kernel/arch/arm64/fpsimd.py", "kernel/arch/arm64/traps.py", "kernel/arch/arm64/arch.py",
             "kernel/arch/riscv/arch.py", "kernel/arch/arm64/signal.py", "machine/cpu_arm64.py", "debug/views.py"]
    hits = [f"{f}:{n}" for f in files for n, line in enumerate((ROOT / f).read_text().splitlines(), 1)
            if "type: ignore[attr-defined" in line]
    assert hits == []
