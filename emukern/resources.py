"""Where the example guests (``guest_asm/``: sources, include files, C programs) live.

In a source checkout (or an editable install) they are the repository's top-level ``guest_asm/``
folder, so edits there take effect at once.  A built wheel or a non-editable ``pip install .``
carries the same tree as package data under ``emukern/_guest_asm`` (``setup.py`` maps the folder
into the package), so the examples, ``emukern reproduce`` and the ``guest_asm`` fixture work from
outside the repository too.
"""
from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent


def guest_asm_dir() -> Path:
    """The ``guest_asm`` directory: the source tree's when there is one, else the packaged copy."""
    src = _PKG.parent / "guest_asm"
    if (src / "include").is_dir():
        return src
    return _PKG / "_guest_asm"


def find_example(path: str | Path) -> Path | None:
    """A relative path that does not exist from the working directory, looked up among the
    packaged examples: ``guest_asm/riscv/hello.S`` or ``riscv/hello.S`` both name the same file.
    None when there is no such example."""
    p = Path(path)
    if p.is_absolute():
        return None
    parts = p.parts[1:] if p.parts[:1] == ("guest_asm",) else p.parts
    if not parts:
        return None
    cand = guest_asm_dir().joinpath(*parts)
    return cand if cand.is_file() else None
