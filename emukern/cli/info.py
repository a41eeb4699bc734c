"""`emukern info`: the policies, cost-model constants, sysctls, kernels and example guests."""
from __future__ import annotations

import argparse
from typing import Any


def add_info_command(sub: Any) -> None:
    i = sub.add_parser("info", help="list policies, cost-model constants, sysctls or the example guests")
    i.add_argument("--plugin", action="append", default=[], metavar="FILE.py|MODULE",
                   help="load a policy plug-in first, so its values are listed")
    i.add_argument("what", choices=["policies", "costs", "sysctls", "examples", "kernels", "all"], nargs="?",
                   default="all")
    i.set_defaults(func=cmd_info)


def cmd_info(a: argparse.Namespace) -> int:
    if a.what == "examples":
        return print_examples()
    if a.what == "kernels":
        from emukern.kernel.versions import format_kernels
        print("\n".join(format_kernels()))
        return 0
    from emukern.kernel.plugins import load_plugin
    from emukern.report import print_info
    for spec in getattr(a, "plugin", []):
        load_plugin(spec)
    print_info(a.what)
    return 0


def print_examples() -> int:
    """The example guests shipped with emukern (the repository's guest_asm/, packaged in the wheel).
    `emukern run guest_asm/riscv/hello.S` finds them from any directory."""
    from emukern.resources import guest_asm_dir
    root = guest_asm_dir()
    print(f"example guests in {root} (run one with: emukern run guest_asm/<arch>/<file>):")
    for sub in sorted(d for d in root.iterdir() if d.is_dir() and d.name != "include"):
        files = sorted(p.name for p in sub.iterdir() if p.suffix in (".S", ".c"))
        if files:
            print(f"  guest_asm/{sub.name}/: {' '.join(files)}")
    return 0
