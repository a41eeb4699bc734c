"""pytest configuration for the SVE2 unit tests: make sve2_guest importable, and build the
differential guest once per session."""
from __future__ import annotations

import os
import sys

import pytest

_here = os.path.dirname(os.path.abspath(__file__))
if _here not in sys.path:
    sys.path.insert(0, _here)


@pytest.fixture(scope="module")
def sve2_elf(tmp_path_factory):
    """(ELF path, case list) of the differential guest (sve2_guest.py)."""
    import sve2_guest
    from emukern.loader.asm import assemble
    cl = sve2_guest.cases()
    src = tmp_path_factory.mktemp("sve2") / "sve2_cases.S"
    src.write_text(sve2_guest.guest_source(cl))
    return assemble(src, "arm64"), cl
