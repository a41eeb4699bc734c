"""Issue 17, "the seam between hardware and kernel": machine/ is hardware only, the kernel reaches
it through a small public API.  These read the source, so a regression fails here by name."""
from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

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
    from emukern.kernel.arm64 import entry_fpsimd
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
    src = _function_source(ROOT / "kernel" / "arm64" / "fpsimd.py", "task_fpsimd_load")
    assert src.count("_pol(k)") == 1 and src.count('"legacy"') == 1


# ---- item 6: the debugger asks the arch which handler a trap goes to --------------------------
def test_debugger_has_no_copy_of_the_arch_dispatch_table():
    names = ("do_el0_undef", "do_el0_sys", "do_sve_acc", "do_el0_brk", "do_trap_insn_illegal",
             "do_trap_break", "do_page_fault", "riscv_v_first_use_handler")
    hits = [f"{p.relative_to(ROOT)}: {n}" for p, text in _sources("debug") for n in names
            if f'"{n}' in text or f"'{n}" in text]
    assert hits == []


def test_arch_tables_name_the_handlers_the_kernel_logs():
    from emukern.kernel.arm64.arch import Arm64Arch
    from emukern.kernel.riscv.arch import RiscvArch
    from emukern.machine.trap import TrapKind
    assert Arm64Arch.TRAP_HANDLERS[TrapKind.SVE_ACCESS] == "do_sve_acc"
    assert RiscvArch.TRAP_HANDLERS[TrapKind.ILLEGAL] == "do_trap_insn_illegal"
    for arch in (Arm64Arch, RiscvArch):
        assert {TrapKind.ILLEGAL, TrapKind.MEM_FAULT, TrapKind.BREAKPOINT} <= set(arch.TRAP_HANDLERS)
