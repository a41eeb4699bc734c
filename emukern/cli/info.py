"""`emukern info`: the policies, cost-model constants, sysctls, kernels and example guests."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_info_command(sub: Any) -> None:
    i = sub.add_parser(
        "info", help="list policies, cost-model constants, sysctls, kernels or the example guests",
        description="Lists what a machine is made of. TOPIC is one of:\n"
                    "  policies  the switches (--policy NAME=VALUE), each with its patch's subject and author\n"
                    "  costs     the cost-model constants, in cycles (--cost NAME=N)\n"
                    "  sysctls   the sysctls a default machine of each arch registers (--sysctl KEY=VALUE)\n"
                    "  examples  the example guests under guest_asm/\n"
                    "  kernels   the Linux releases --kernel models\n"
                    "  all       everything above but examples and kernels (the default)",
        epilog="examples:\n  emukern info policies\n  emukern info costs\n"
               "  emukern info policies --plugin emukern.kernel.plugin_examples.sve_drop_after_n",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    i.add_argument("--plugin", action="append", default=[], metavar="FILE.py|MODULE",
                   help="load a policy plug-in first, so its values are listed")
    i.add_argument("what", choices=["policies", "costs", "sysctls", "examples", "kernels", "all"], nargs="?",
                   default="all", metavar="TOPIC", help="what to list (see above; default: all)")
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


def _first_comment(path: "Path") -> str:
    """A guest's one-line description: the first line of its leading comment."""
    for line in path.read_text(errors="replace").splitlines()[:6]:
        text = line.strip().lstrip("#/*").strip().rstrip("*/").strip()
        if text:
            return text
    return ""


def print_examples() -> int:
    """The example guests shipped with emukern (the repository's guest_asm/, packaged in the
    wheel), each with the first line of its comment.  `emukern run guest_asm/riscv/hello.S` finds
    them from any directory; the C ones are built with a cross compiler first."""
    from emukern.resources import guest_asm_dir
    root = guest_asm_dir()
    print(f"example guests in {root}")
    print("  run an assembly one with: emukern run guest_asm/<arch>/<file>.S   (assembled with LLVM, cached)")
    print("  build a C one first, e.g.: aarch64-linux-gnu-gcc -static -O2 -o prog guest_asm/c/<file>.c "
          "(or riscv64-linux-gnu-gcc), then: emukern run prog")
    # include/ holds .include files and vdso/ the kernel's vDSO images (kernel/vdso): neither is a guest
    for sub in sorted(d for d in root.iterdir() if d.is_dir() and d.name not in ("include", "vdso")):
        files = sorted(p for p in sub.iterdir() if p.suffix in (".S", ".c"))
        if not files:
            continue
        print(f"guest_asm/{sub.name}/")
        width = max(len(p.name) for p in files)
        for p in files:
            print(f"  {p.name:<{width}}  {_first_comment(p)}")
    return 0
