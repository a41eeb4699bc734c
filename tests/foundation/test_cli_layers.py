"""The command line is the top of the import graph: nothing below emukern/cli/ imports it, and the
machine configuration (emukern/config.py) is plain data that imports nothing of the kernel model.
Checked by parsing every module's imports (module level and inside functions) with ast."""
from __future__ import annotations

import ast
from pathlib import Path

import emukern

PKG = Path(emukern.__file__).resolve().parent


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(source: str, module: str, is_package: bool = False) -> set[str]:
    """Every module ``source`` (the text of ``module``) imports anywhere in its body, as absolute
    names (relative imports resolved); for ``from X import a``, both X and X.a (a may be a module)."""
    package = module if is_package else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.add(mod)
            out.update(f"{mod}.{alias.name}" for alias in node.names)
    return out


def imports_of_file(path: Path) -> set[str]:
    return imports_of(path.read_text(), module_name(path), path.name == "__init__.py")


def under(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def sources() -> list[Path]:
    files = sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)
    assert len(files) > 50 and PKG / "cli" / "__init__.py" in files and PKG / "options.py" in files
    return files


def test_only_the_cli_imports_the_cli() -> None:
    offenders = {}
    for path in sources():
        if under(module_name(path), "emukern.cli"):
            continue
        bad = sorted(m for m in imports_of_file(path) if under(m, "emukern.cli"))
        if bad:
            offenders[str(path.relative_to(PKG.parent))] = bad
    assert not offenders, f"modules below the command line import it: {offenders}"


def test_config_imports_nothing_from_the_kernel() -> None:
    mods = imports_of_file(PKG / "config.py")
    assert not [m for m in mods if under(m, "emukern.kernel")], sorted(mods)


def test_the_check_sees_imports_inside_functions_and_relative_ones() -> None:
    # shaped like the old emukern/debug/cli.py, whose import of the CLI was inside a function
    src = ("import os\n"
           "def f():\n    from emukern.cli import config_from_args\n"
           "def g():\n    from ..cli import main\n    import emukern.cli.run\n"
           "class C:\n    def h(self):\n        from . import engine\n")
    found = imports_of(src, "emukern.debug.probe")
    assert {"emukern.cli.config_from_args", "emukern.cli.main", "emukern.cli.run",
            "emukern.debug.engine", "os"} <= found
    assert "emukern.kernel.preempt" in imports_of("from .kernel import preempt\n", "emukern.config")
