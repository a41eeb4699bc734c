"""Shared constants for the loader tests (a uniquely named module, so it never clashes with
other test directories' conftest.py)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
INC = DATA / "inc"

needs_llvm = pytest.mark.skipif(
    not (shutil.which("llvm-mc") or os.environ.get("EMUKERN_LLVM_MC"))
    or not (shutil.which("ld.lld") or os.environ.get("EMUKERN_LD_LLD")),
    reason="llvm-mc / ld.lld not installed",
)
