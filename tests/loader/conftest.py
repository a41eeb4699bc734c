"""Fixtures for the loader tests: a private assembler cache and two good guest ELFs."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from loader_testutil import DATA, INC


@pytest.fixture(scope="module", autouse=True)
def _private_asm_cache(tmp_path_factory: pytest.TempPathFactory):
    # module scope: set for each loader test module and undone after it.  (Session scope left
    # EMUKERN_CACHE pointing here for every later test on the same xdist worker, so they missed
    # the real cache: the linux-source selftests skipped and C guests were rebuilt.)
    old = os.environ.get("EMUKERN_CACHE")
    os.environ["EMUKERN_CACHE"] = str(tmp_path_factory.mktemp("emukern-cache"))
    yield
    if old is None:
        os.environ.pop("EMUKERN_CACHE", None)
    else:
        os.environ["EMUKERN_CACHE"] = old


@pytest.fixture(scope="module")
def rv_elf(_private_asm_cache) -> Path:
    from emukern.loader.asm import assemble

    return assemble(DATA / "rv_hello.S", "riscv64", include_dirs=[INC])


@pytest.fixture(scope="module")
def arm_elf(_private_asm_cache) -> Path:
    from emukern.loader.asm import assemble

    return assemble(DATA / "arm64_hello.S", "arm64", include_dirs=[INC])


@pytest.fixture(scope="module")
def rv_bytes(rv_elf: Path) -> bytes:
    return rv_elf.read_bytes()
