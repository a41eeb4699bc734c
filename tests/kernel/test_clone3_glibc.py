"""glibc 2.41 (Debian trixie's libc6) takes clone3 for pthread_create: a threaded program and a
fork (guest_asm/c/clone3_glibc.c, built with the cross
compiler, run in a root holding trixie's libc6) still run, and the syscall counts show clone3
taken.  (posix_spawn, which glibc also starts with clone3 and CLONE_VFORK, is tested by
tests/kernel/test_vfork.py.)  The package comes through emukern.debian.AptFetcher; without it the
test skips."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from emukern.api import Machine
from emukern.debian import AptFetcher, FetchError, extract

CC = {"riscv64": "riscv64-linux-gnu-gcc", "arm64": "aarch64-linux-gnu-gcc"}
SRC = Path(__file__).resolve().parents[2] / "guest_asm" / "c" / "clone3_glibc.c"


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_glibc_takes_clone3(arch, tmp_path):
    if shutil.which(CC[arch]) is None or shutil.which("dpkg-deb") is None:
        pytest.skip("the cross compiler or dpkg-deb is not installed")
    try:
        deb = AptFetcher("trixie", arch).download("libc6")
    except FetchError as exc:
        pytest.skip(f"Debian trixie's libc6 for {arch} could not be had: {exc}")
    root = tmp_path / "root"
    extract(deb, root)
    for d in ("lib", "bin", "sbin"):
        if not (root / d).exists():
            (root / d).symlink_to(f"usr/{d}")
    subprocess.run([CC[arch], "-O2", "-o", str(root / "prog"), str(SRC), "-pthread"], check=True)
    r = Machine(root=str(root)).load(root / "prog", []).run()
    assert r.exit_status == 0, (r.message, r.stderr)
    assert r.stdout == b"threads 2 4 6 8\nfork status 6\n"
    assert r.unknown_syscalls == {}
    # the four threads went through clone3; fork is glibc's clone
    assert r.syscalls["clone3"] == 4 and r.syscalls["clone"] == 1
