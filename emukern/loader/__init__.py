"""Guest program loading: assembling ``.S`` sources, loading static ELF64 files, and building
the Linux initial stack."""
from __future__ import annotations

from emukern.loader.asm import (
    assemble,
    assemble_arm64_snippet,
    assemble_snippet,
    detect_arch_from_source,
    find_tools,
)
from emukern.loader.elf import ElfImage, Mapping, Segment, load_elf
from emukern.loader.stack import (
    StackLayout,
    build_initial_stack,
    layout_initial_stack,
    standard_auxv,
)

__all__ = [
    "ElfImage", "Mapping", "Segment", "StackLayout",
    "assemble", "assemble_arm64_snippet", "assemble_snippet", "build_initial_stack",
    "detect_arch_from_source", "find_tools", "layout_initial_stack", "load_elf",
    "standard_auxv",
]
