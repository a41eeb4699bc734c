#!/usr/bin/env python3
"""The shape of emukern's source tree: layers, import circles, class shapes and a few smells.

    python tools/shape_report.py [--json] [ROOT]

ROOT is a checkout (the directory holding ``emukern/`` and ``README.md``); it defaults to the
repository this file sits in.  Pure stdlib :mod:`ast` — nothing of emukern is imported, so the
report works on any tree, even one that does not import.

What it measures (every figure is about ``ROOT/emukern``):

* the import graph of emukern modules — every import of an emukern module, split into
  *module-level* (runs at import time, class bodies included), *function-level* (inside a
  ``def``) and *type-checking* (under ``if TYPE_CHECKING:``, never run);
* *back-arrows*: an import of any kind from a lower layer (:data:`LAYERS`) into a higher one;
  inside ``emukern.kernel`` the same against :data:`KERNEL_SUBLAYERS`, reported separately;
* *circles*: strongly connected components of the module graph (all three kinds of import), and
  whether each spans more than one package;
* classes under ``emukern/kernel``: the one with most methods, and every one with more than one
  base besides ``object``/``Protocol``/``Generic[...]``;
* ``except Exception`` / ``except BaseException`` / bare ``except:`` under ``emukern/kernel`` and
  ``emukern/debug``, and how many say ``# noqa: CODE - reason`` on the same line;
* ``config.arch ==`` / ``!=`` comparisons in ``emukern/kernel`` outside the architecture code;
* modules under ``emukern/kernel`` importing ``unicorn``;
* README.md's line count.

The functions are the API of ``tests/foundation/test_shape.py``: :func:`analyze` returns one
JSON-able dict, the other public functions each compute one part of it.
"""
from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path

PKG = "emukern"

# ----------------------------------------------------------------------------------------------
# LAYERS, lowest first.  A module belongs to the entry that is the longest dotted prefix of its
# name (``emukern.kernel.signal.generate`` -> ``emukern.kernel``).  An import from a module into a
# module of a *higher* layer is a back-arrow.  Modules of one layer may import each other.
# The root package ``emukern`` (``emukern/__init__.py``: the docstring and ``__version__``) is
# placed in L0 by exact name only — it must stay free of imports; a facade there that imports the
# API would show up as a back-arrow.  Names that do not exist yet (``options``, ``boot_checks``)
# are placed ahead of the reshaping that adds them.  A module in the tree that no entry places is
# an error (``unplaced``; exit status 1).
LAYERS: dict[str, tuple[str, ...]] = {
    # plain data and utilities: no emukern imports above them
    "L0 data": ("emukern", "emukern.errors", "emukern.config", "emukern.resources"),
    # the hardware: CPUs, memory, the vector units, the trap record
    "L1 machine": ("emukern.machine",),
    # what loads and names guest code
    "L2 loader": ("emukern.loader", "emukern.disasm"),
    # the Python kernel (sub-layers: KERNEL_SUBLAYERS)
    "L3 kernel": ("emukern.kernel",),
    # everything that drives a kernel: the public API and the tools built on it
    "L4 tools": ("emukern.api", "emukern.debug", "emukern.bench", "emukern.selftests",
                 "emukern.oracle", "emukern.sweep", "emukern.report", "emukern.debian",
                 "emukern.pytest_plugin", "emukern.options"),
    # the command line (module or package)
    "L5 cli": ("emukern.cli",),
}

# Inside emukern.kernel, lowest first; names are relative to ``emukern.kernel`` and matched the
# same way (longest dotted prefix), so ``signal.syscalls`` (kernel/signal/syscalls.py) is a
# syscall module though ``signal`` is a lower sub-layer.  ``""`` is ``emukern/kernel/__init__.py``
# itself (exact only).  Both today's modules and the names the reshaping introduces (``types``,
# ``mm``, ``arch``, ``entry``, a ``syscalls`` package) are placed.  Back-arrows against these are
# information, not a criterion: the reshaping is moving modules across them now.  A kernel module
# no entry places is listed (``kernel_unplaced``), not an error.
KERNEL_SUBLAYERS: dict[str, tuple[str, ...]] = {
    # leaf data and helpers every part may use (plugins: the decision-point registry the
    # patched functions consult)
    "K0 base": ("types", "errno", "task", "thread_info", "sysret", "cost", "result", "versions",
                "switches", "policies", "resource", "uapi", "cred", "files", "spinlock", "plugins", "pid",
                "boot_checks"),
    # the subsystems underneath signals
    "K1 mm/fs": ("mm", "fs", "net", "sysctl", "vdso"),
    # signal generation, delivery, job control, exit/wait, ptrace, core dumps; the tick (it runs
    # the interval timers) and the preemption points of long syscalls (they take the tick)
    "K2 signal": ("signal", "tick", "preempt"),
    # the syscall handlers (free functions, one module per Linux file) and exec
    "K3 syscalls": ("syscalls", "process_vm", "exec", "epoll", "select"),
    # what each architecture fills in
    "K4 arch": ("arch",),
    # trap entry, the scheduler and run loop that resume into it, the composition root, plug-ins
    "K5 entry/root": ("", "entry", "kernel", "sched", "sched_fair", "smp", "plugin_examples"),
}

# Architecture code: where ``config.arch ==`` is in place (the K4 sub-layer's modules).
ARCH_SUBLAYER = "K4 arch"

KINDS = ("module", "function", "type_checking")

# ----------------------------------------------------------------------------------------------
# modules


def module_name(root: Path, path: Path) -> str:
    """``ROOT/emukern/kernel/signal/__init__.py`` -> ``emukern.kernel.signal``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_of(root: Path, path: Path) -> str:
    """The package a module is part of: the directory its file is in, dotted.  For a package's
    ``__init__`` that is the package itself (``emukern.kernel.signal``); for a plain module its
    parent (``emukern.kernel.kernel`` -> ``emukern.kernel``)."""
    return ".".join(path.parent.relative_to(root).parts)


def collect_modules(root: Path) -> dict[str, Path]:
    """Every module of ROOT/emukern, name -> file (``__pycache__`` and non-.py files skipped)."""
    root = Path(root)
    out: dict[str, Path] = {}
    for p in sorted((root / PKG).rglob("*.py")):
        if "__pycache__" in p.parts:
            continue
        out[module_name(root, p)] = p
    return out


def _place(name: str, table: dict[str, tuple[str, ...]], exact_only: set[str],
           strip: str = "") -> str | None:
    """The key of ``table`` whose longest entry prefixes ``name`` (after removing ``strip``)."""
    if strip:
        if name == strip:
            name = ""
        elif name.startswith(strip + "."):
            name = name[len(strip) + 1:]
        else:
            return None
    best: tuple[int, str] | None = None
    for key, prefixes in table.items():
        for p in prefixes:
            if name == p or (p not in exact_only and name.startswith(p + ".")):
                if best is None or len(p) > best[0]:
                    best = (len(p), key)
    return best[1] if best else None


def layer_of(name: str) -> str | None:
    """The :data:`LAYERS` key of a module, None when no entry places it."""
    return _place(name, LAYERS, {PKG})


def kernel_sublayer_of(name: str) -> str | None:
    """The :data:`KERNEL_SUBLAYERS` key of a kernel module, None when outside or unplaced."""
    return _place(name, KERNEL_SUBLAYERS, {""}, strip=f"{PKG}.kernel")


def _rank(table: dict[str, tuple[str, ...]], key: str) -> int:
    return list(table).index(key)


# ----------------------------------------------------------------------------------------------
# imports


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk_imports(tree: ast.AST):
    """Yield (import node, kind) for every Import/ImportFrom, kind one of :data:`KINDS`."""

    def visit(node: ast.AST, in_func: bool, in_tc: bool):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, ("type_checking" if in_tc else "function" if in_func else "module")
            return
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                yield from visit(child, in_func, True)
            for child in node.orelse:
                yield from visit(child, in_func, in_tc)
            return
        func = in_func or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for child in ast.iter_child_nodes(node):
            yield from visit(child, func, in_tc)

    yield from visit(tree, False, False)


def _resolve_base(mod: str, is_pkg: bool, level: int, target: str | None) -> str | None:
    """The absolute module name a (possibly relative) ``from`` names."""
    if not level:
        return target
    parts = mod.split(".") if is_pkg else mod.split(".")[:-1]
    if level - 1 > len(parts):
        return None
    parts = parts[:len(parts) - (level - 1)]
    if target:
        parts += target.split(".")
    return ".".join(parts) or None


def _targets(node: ast.Import | ast.ImportFrom, mod: str, is_pkg: bool,
             modules: dict[str, Path]) -> list[str]:
    """The modules one import statement names (deduplicated, in order)."""
    out: list[str] = []
    if isinstance(node, ast.Import):
        out = [a.name for a in node.names]
    else:
        base = _resolve_base(mod, is_pkg, node.level, node.module)
        if base is None:
            return []
        for a in node.names:
            sub = f"{base}.{a.name}"
            out.append(sub if sub in modules else base)
    return list(dict.fromkeys(out))


def import_edges(root: Path, modules: dict[str, Path] | None = None) -> list[dict]:
    """Every import of an emukern module under ROOT/emukern: one dict per (statement, target)
    with src, dst, kind, file (relative to ROOT), line."""
    root = Path(root)
    modules = collect_modules(root) if modules is None else modules
    edges: list[dict] = []
    for mod, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        is_pkg = path.name == "__init__.py"
        for node, kind in _walk_imports(tree):
            for dst in _targets(node, mod, is_pkg, modules):
                if dst == PKG or dst.startswith(PKG + "."):
                    edges.append({"src": mod, "dst": dst, "kind": kind,
                                  "file": str(path.relative_to(root)), "line": node.lineno})
    return edges


def import_counts(edges: list[dict]) -> dict:
    """Per kind: ``edges`` (statement x target) and ``statements``."""
    out: dict = {}
    for k in KINDS:
        ks = [e for e in edges if e["kind"] == k]
        out[k] = {"edges": len(ks), "statements": len({(e["file"], e["line"]) for e in ks})}
    out["total"] = {"edges": len(edges),
                    "statements": len({(e["file"], e["line"]) for e in edges})}
    return out


def back_arrows(edges: list[dict]) -> list[dict]:
    """Imports (any kind) from a module of a lower :data:`LAYERS` layer into a higher one."""
    out = []
    for e in edges:
        a, b = layer_of(e["src"]), layer_of(e["dst"])
        if a and b and _rank(LAYERS, a) < _rank(LAYERS, b):
            out.append({**e, "src_layer": a, "dst_layer": b})
    return out


def kernel_back_arrows(edges: list[dict]) -> list[dict]:
    """The same inside emukern.kernel against :data:`KERNEL_SUBLAYERS` (information)."""
    out = []
    for e in edges:
        a, b = kernel_sublayer_of(e["src"]), kernel_sublayer_of(e["dst"])
        if a and b and _rank(KERNEL_SUBLAYERS, a) < _rank(KERNEL_SUBLAYERS, b):
            out.append({**e, "src_layer": a, "dst_layer": b})
    return out


def unplaced(modules: dict[str, Path]) -> list[str]:
    """Modules no :data:`LAYERS` entry places (an error)."""
    return sorted(m for m in modules if layer_of(m) is None)


def kernel_unplaced(modules: dict[str, Path]) -> list[str]:
    """Kernel modules no :data:`KERNEL_SUBLAYERS` entry places (information)."""
    k = f"{PKG}.kernel"
    return sorted(m for m in modules
                  if (m == k or m.startswith(k + ".")) and kernel_sublayer_of(m) is None)


# ----------------------------------------------------------------------------------------------
# circles


def sccs(nodes: list[str], edges: list[dict]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    graph: dict[str, set[str]] = {n: set() for n in nodes}
    for e in edges:
        if e["src"] != e["dst"]:
            graph.setdefault(e["src"], set()).add(e["dst"])
            graph.setdefault(e["dst"], set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return sorted(out, key=lambda c: (-len(c), c))


def circles(root: Path, modules: dict[str, Path], edges: list[dict]) -> list[dict]:
    """Each SCC with its packages and whether it spans more than one (see :func:`package_of`)."""
    out = []
    for comp in sccs(list(modules), edges):
        pkgs = sorted({package_of(root, modules[m]) if m in modules else m.rpartition(".")[0]
                       for m in comp})
        out.append({"modules": comp, "packages": pkgs, "spans_packages": len(pkgs) > 1})
    return out


# ----------------------------------------------------------------------------------------------
# classes

_IGNORED_BASES = {"object", "Protocol", "Generic"}


def _base_name(b: ast.expr) -> str:
    if isinstance(b, ast.Subscript):
        b = b.value
    if isinstance(b, ast.Attribute):
        return b.attr
    if isinstance(b, ast.Name):
        return b.id
    return ast.unparse(b)


def classes(root: Path, under: str = f"{PKG}/kernel") -> list[dict]:
    """Every class under ROOT/under: name, file, line, methods (defs in the body), bases (the
    ones that count: not object/Protocol/Generic[...])."""
    root = Path(root)
    out = []
    for p in sorted((root / under).rglob("*.py")):
        if "__pycache__" in p.parts:
            continue
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"), str(p))):
            if isinstance(node, ast.ClassDef):
                out.append({
                    "name": node.name, "file": str(p.relative_to(root)), "line": node.lineno,
                    "methods": sum(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                                   for n in node.body),
                    "bases": [ast.unparse(b) for b in node.bases
                              if _base_name(b) not in _IGNORED_BASES],
                })
    return out


def with_ancestors(cls: list[dict]) -> list[dict]:
    """Add ``ancestors`` to each class: the classes of the same tree it inherits from, directly
    or not, matched by name (``Kernel(SyscallsMixin, SignalMixin)`` -> the mixins those stack)."""
    by_name: dict[str, list[str]] = {}
    for c in cls:
        by_name.setdefault(c["name"], [_base_name(ast.parse(b, mode="eval").body)
                                       for b in c["bases"]])
    for c in cls:
        seen: list[str] = []
        todo = list(by_name.get(c["name"], []))
        while todo:
            n = todo.pop(0)
            if n not in seen and n != c["name"]:
                seen.append(n)
                todo += by_name.get(n, [])
        c["ancestors"] = seen
    return cls


def largest_class(cls: list[dict]) -> dict | None:
    return max(cls, key=lambda c: c["methods"], default=None)


def multi_base_classes(cls: list[dict]) -> list[dict]:
    return [c for c in cls if len(c["bases"]) > 1]


# ----------------------------------------------------------------------------------------------
# smells

# ``# noqa`` then optional codes, then a reason: at least one word of 3+ letters
_NOQA = re.compile(r"#\s*noqa\b(?::?\s*[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)?(?P<rest>.*)$")
_REASON = re.compile(r"[A-Za-z]{3,}")


def noqa_reason(line: str) -> str | None:
    """The reason a ``# noqa`` on this line gives, None when there is no noqa or no reason."""
    m = _NOQA.search(line)
    if not m:
        return None
    rest = m.group("rest").strip(" \t-—–:;,.")
    return rest if _REASON.search(rest) else None


def _broad(t: ast.expr | None) -> bool:
    if t is None:
        return True
    if isinstance(t, ast.Tuple):
        return any(_broad(e) for e in t.elts)
    return _base_name(t) in ("Exception", "BaseException")


def _reraises(h: ast.ExceptHandler) -> bool:
    """The handler ends in a bare ``raise``: clean-up on the way out, nothing is swallowed."""
    return bool(h.body) and isinstance(h.body[-1], ast.Raise) and h.body[-1].exc is None


def broad_excepts(root: Path, under: str) -> dict:
    """``except Exception``/``BaseException``/bare ``except:`` sites under ROOT/under.

    ``total`` counts them all; ``reraise`` those whose body ends in a bare ``raise`` (clean-up,
    nothing swallowed); ``noqa_with_reason`` those whose ``except`` line carries ``# noqa`` and a
    reason; ``unjustified`` lists the sites that are neither."""
    root = Path(root)
    sites = []
    for p in sorted((root / under).rglob("*.py")):
        if "__pycache__" in p.parts:
            continue
        text = p.read_text(encoding="utf-8")
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text, str(p))):
            if isinstance(node, ast.ExceptHandler) and _broad(node.type):
                line = lines[node.lineno - 1]
                sites.append({"file": str(p.relative_to(root)), "line": node.lineno,
                              "text": line.strip(), "noqa_reason": noqa_reason(line),
                              "reraise": _reraises(node)})
    sites.sort(key=lambda s: (s["file"], s["line"]))
    return {"total": len(sites),
            "noqa_with_reason": sum(s["noqa_reason"] is not None for s in sites),
            "reraise": sum(s["reraise"] for s in sites),
            "unjustified": [s for s in sites if not s["reraise"] and s["noqa_reason"] is None],
            "sites": sites}


def _is_config_arch(e: ast.expr) -> bool:
    if not (isinstance(e, ast.Attribute) and e.attr == "arch"):
        return False
    v = e.value
    return (isinstance(v, ast.Name) and v.id == "config") or (
        isinstance(v, ast.Attribute) and v.attr == "config")


def config_arch_compares(root: Path, under: str = f"{PKG}/kernel") -> list[dict]:
    """Lines where ``config.arch`` (``x.config.arch`` too) is the left side of ``==``/``!=`` —
    what ``grep 'config.arch [!=]='`` finds, minus comments and strings — under ROOT/under,
    outside the :data:`ARCH_SUBLAYER` modules.  One entry per line.  (``image.arch !=
    config.arch``, exec's check that the ELF is for this machine, is not arch dispatch.)"""
    root = Path(root)
    modules = collect_modules(root)
    out = []
    for mod, p in modules.items():
        rel = p.relative_to(root).as_posix()
        if not rel.startswith(under.rstrip("/") + "/"):
            continue
        if kernel_sublayer_of(mod) == ARCH_SUBLAYER:
            continue
        text = p.read_text(encoding="utf-8")
        lines = text.splitlines()
        seen = set()
        for node in ast.walk(ast.parse(text, str(p))):
            if isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
                if any(isinstance(op, (ast.Eq, ast.NotEq)) and _is_config_arch(operands[i])
                       for i, op in enumerate(node.ops)) and node.lineno not in seen:
                    seen.add(node.lineno)
                    out.append({"file": rel, "line": node.lineno,
                                "text": lines[node.lineno - 1].strip()})
    return sorted(out, key=lambda s: (s["file"], s["line"]))


def unicorn_importers(root: Path, under: str = f"{PKG}/kernel") -> list[dict]:
    """Every import of ``unicorn`` (any form, any kind) in a module under ROOT/under."""
    root = Path(root)
    out = []
    for p in sorted((root / under).rglob("*.py")):
        if "__pycache__" in p.parts:
            continue
        for node, kind in _walk_imports(ast.parse(p.read_text(encoding="utf-8"), str(p))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if not node.level else [])
            if any(n == "unicorn" or n.startswith("unicorn.") for n in names):
                out.append({"module": module_name(root, p), "file": str(p.relative_to(root)),
                            "line": node.lineno, "kind": kind})
    return out


def readme_lines(root: Path) -> int | None:
    p = Path(root) / "README.md"
    return len(p.read_text(encoding="utf-8").splitlines()) if p.exists() else None


# ----------------------------------------------------------------------------------------------
# the report


def analyze(root: Path) -> dict:
    """Everything above for the tree at ROOT, as one JSON-able dict."""
    root = Path(root).resolve()
    modules = collect_modules(root)
    edges = import_edges(root, modules)
    cls = with_ancestors(classes(root))
    circ = circles(root, modules, edges)
    big = largest_class(cls)
    return {
        "root": str(root),
        "modules": len(modules),
        "unplaced": unplaced(modules),
        "kernel_unplaced": kernel_unplaced(modules),
        "imports": {"counts": import_counts(edges),
                    "function_level": sum(e["kind"] == "function" for e in edges),
                    "edges": edges},
        "back_arrows": back_arrows(edges),
        "kernel_back_arrows": kernel_back_arrows(edges),
        "sccs": circ,
        "sccs_spanning_packages": sum(c["spans_packages"] for c in circ),
        "largest_class": big,
        "multi_base_classes": multi_base_classes(cls),
        "except_broad": {"kernel": broad_excepts(root, f"{PKG}/kernel"),
                         "debug": broad_excepts(root, f"{PKG}/debug")},
        "config_arch_compares": config_arch_compares(root),
        "unicorn_importers": unicorn_importers(root),
        "readme_lines": readme_lines(root),
        "layers": {k: list(v) for k, v in LAYERS.items()},
        "kernel_sublayers": {k: list(v) for k, v in KERNEL_SUBLAYERS.items()},
    }


def summary(r: dict) -> list[tuple[str, str]]:
    """The headline figures, (label, value)."""
    c = r["imports"]["counts"]
    big = r["largest_class"]
    kx, dx = r["except_broad"]["kernel"], r["except_broad"]["debug"]
    return [
        ("modules", str(r["modules"])),
        ("unplaced modules (error)", str(len(r["unplaced"]))),
        ("kernel modules in no sub-layer", str(len(r["kernel_unplaced"]))),
        ("emukern imports: module-level", f'{c["module"]["edges"]} ({c["module"]["statements"]} stmts)'),
        ("emukern imports: function-level", f'{c["function"]["edges"]} ({c["function"]["statements"]} stmts)'),
        ("emukern imports: TYPE_CHECKING", f'{c["type_checking"]["edges"]} ({c["type_checking"]["statements"]} stmts)'),
        ("back-arrows between layers", str(len(r["back_arrows"]))),
        ("back-arrows inside kernel (info)", str(len(r["kernel_back_arrows"]))),
        ("SCCs (>1 module)", str(len(r["sccs"]))),
        ("SCCs spanning >1 package", str(r["sccs_spanning_packages"])),
        ("largest kernel class", f'{big["name"]} ({big["file"]}): {big["methods"]} methods'
         if big else "-"),
        ("kernel classes with >1 base", str(len(r["multi_base_classes"]))),
        ("except Exception: kernel", f'{kx["total"]} ({kx["noqa_with_reason"]} noqa+reason, '
         f'{kx["reraise"]} re-raise, {len(kx["unjustified"])} neither)'),
        ("except Exception: debug", f'{dx["total"]} ({dx["noqa_with_reason"]} noqa+reason, '
         f'{dx["reraise"]} re-raise, {len(dx["unjustified"])} neither)'),
        ("config.arch ==/!= in kernel (non-arch)", str(len(r["config_arch_compares"]))),
        ("kernel modules importing unicorn", str(len({u["module"] for u in r["unicorn_importers"]}))),
        ("README.md lines", str(r["readme_lines"])),
    ]


def _details(r: dict) -> list[tuple[str, list[str]]]:
    def site(e: dict) -> str:
        return f'{e["file"]}:{e["line"]}'
    out = [
        ("unplaced modules (ERROR: place them in LAYERS)", r["unplaced"]),
        ("kernel modules in no sub-layer", r["kernel_unplaced"]),
        ("back-arrows between layers", [
            f'{e["src"]} ({e["src_layer"]}) -> {e["dst"]} ({e["dst_layer"]}) [{e["kind"]}] {site(e)}'
            for e in r["back_arrows"]]),
        ("back-arrows inside the kernel (information)", [
            f'{e["src"]} ({e["src_layer"]}) -> {e["dst"]} ({e["dst_layer"]}) [{e["kind"]}] {site(e)}'
            for e in r["kernel_back_arrows"]]),
        ("import circles (SCCs)", [
            f'{"SPANS " + str(len(c["packages"])) + " packages" if c["spans_packages"] else "one package"}'
            f' ({len(c["modules"])} modules: {", ".join(c["modules"])})' for c in r["sccs"]]),
        ("kernel classes with >1 base", [
            f'{c["name"]} {site(c)}: {len(c["bases"])} bases ({", ".join(c["bases"])}), '
            f'{len(c["ancestors"])} ancestors in all'
            for c in r["multi_base_classes"]]),
        ("except Exception in the kernel", [
            f'{site(s)} {"noqa+reason" if s["noqa_reason"] else "re-raise" if s["reraise"] else "NO REASON"}: {s["text"]}'
            for s in r["except_broad"]["kernel"]["sites"]]),
        ("config.arch ==/!= in the kernel outside arch", [
            f'{site(s)}: {s["text"]}' for s in r["config_arch_compares"]]),
        ("unicorn imports in the kernel", [
            f'{u["module"]} {site(u)} [{u["kind"]}]' for u in r["unicorn_importers"]]),
    ]
    return out


def render(r: dict, out=sys.stdout) -> None:
    """The compact human table (rich when importable), then the site lists."""
    rows = summary(r)
    details = _details(r)
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        w = max(len(k) for k, _ in rows)
        print(f"shape of {r['root']}", file=out)
        for k, v in rows:
            print(f"  {k:<{w}}  {v}", file=out)
        for title, items in details:
            if items:
                print(f"\n{title} ({len(items)}):", file=out)
                for i in items:
                    print(f"  {i}", file=out)
        return
    console = Console(file=out, width=200, soft_wrap=True)
    t = Table(title=f"shape of {r['root']}", show_header=False)
    t.add_column("figure")
    t.add_column("value", justify="right")
    for k, v in rows:
        t.add_row(k, v)
    console.print(t)
    for title, items in details:
        if items:
            console.print(f"\n[bold]{title}[/bold] ({len(items)}):", highlight=False)
            for i in items:
                console.print(f"  {i}", markup=False, highlight=False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object instead")
    ap.add_argument("root", nargs="?", default=str(Path(__file__).resolve().parent.parent),
                    help="the checkout to measure (default: this repository)")
    a = ap.parse_args(argv)
    root = Path(a.root)
    if not (root / PKG).is_dir():
        print(f"shape_report: no {PKG}/ under {root}", file=sys.stderr)
        return 2
    r = analyze(root)
    if a.json:
        json.dump(r, sys.stdout, indent=1)
        print()
    else:
        render(r)
    if r["unplaced"]:
        print(f"shape_report: error: {len(r['unplaced'])} module(s) in no layer: "
              + ", ".join(r["unplaced"]), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
