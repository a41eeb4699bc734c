"""C guests for the tests, built with the Debian cross compilers (one content-addressed build,
shared by every test and xdist worker)."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from emukern.debian import cache_root
from emukern.pytest_plugin import GUEST_ASM

CROSS_CC = {"riscv64": "riscv64-linux-gnu-gcc", "arm64": "aarch64-linux-gnu-gcc"}


def build_cguest(source: str | Path, arch: str, *flags: str) -> Path:
    """A static ELF of a C guest (``source``: a name in guest_asm/c/, or a path to a .c file)
    built with ``<cross gcc> -O2 -static -o OUT SOURCE [flags]``; cached by content (source bytes, flags,
    compiler: the guests include no local headers) under emukern's cache, so every test and xdist worker shares one build.  Skips when
    the compiler is not installed; an installed compiler that fails fails the test with its
    message (it is not "not installed")."""
    cc = shutil.which(CROSS_CC[arch])
    if cc is None:
        pytest.skip(f"{CROSS_CC[arch]} (Debian gcc cross compiler + glibc) is not installed")
    src = Path(source) if isinstance(source, Path) else GUEST_ASM / "c" / f"{source}.c"
    digest = hashlib.sha256(src.read_bytes() + "\0".join((cc, *flags)).encode()).hexdigest()[:16]
    out = cache_root() / "test-guests" / f"{src.stem}-{arch}-{digest}"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
        res = subprocess.run([cc, "-O2", "-static", "-o", str(tmp), str(src), *flags],
                             capture_output=True, text=True)
        if res.returncode != 0:
            pytest.fail(f"{CROSS_CC[arch]} failed on {src.name} ({res.returncode}): {res.stderr.strip()[:600]}")
        tmp.replace(out)
    return out


def run_probe_against(source: Path, arch: str, expected: Path):
    """Build the C probe ``source`` for ``arch``, run it under emukern with no arguments, check it
    exits 0 and prints exactly ``expected`` (recorded from a real kernel or qemu-user); returns
    the RunResult for any further checks."""
    from emukern.api import Machine
    r = Machine(arch=arch).load(build_cguest(source, arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == expected.read_text()
    return r
