"""Fixtures for the guest file system tests: C programs built with the Debian cross compilers
(dynamic against their sysroots, or static), and guest roots made from those sysroots."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Callable

import pytest

from emukern.pytest_plugin import GUEST_ASM

CC = {"riscv64": "riscv64-linux-gnu-gcc", "arm64": "aarch64-linux-gnu-gcc"}
QEMU = {"riscv64": "qemu-riscv64", "arm64": "qemu-aarch64"}
SYSROOT = {"riscv64": Path("/usr/riscv64-linux-gnu"), "arm64": Path("/usr/aarch64-linux-gnu")}
INTERP = {"riscv64": "ld-linux-riscv64-lp64d.so.1", "arm64": "ld-linux-aarch64.so.1"}
ARCHES = list(CC)


def need_cc(arch: str) -> None:
    if shutil.which(CC[arch]) is None or not (SYSROOT[arch] / "lib" / INTERP[arch]).exists():
        pytest.skip(f"{CC[arch]} and its sysroot {SYSROOT[arch]} (Debian cross gcc + glibc) are not installed")


def need_qemu(arch: str) -> None:
    if shutil.which(QEMU[arch]) is None:
        pytest.skip(f"{QEMU[arch]} (qemu-user) is not installed")


@pytest.fixture(scope="session")
def cbuild(tmp_path_factory) -> Callable[..., Path]:
    """cbuild(name, arch, static=False, libs=()) -> the built program (cached for the session)."""
    out_dir = tmp_path_factory.mktemp("cbuild")
    cache: dict[tuple, Path] = {}

    def build(name: str, arch: str, static: bool = False, libs: tuple[str, ...] = ()) -> Path:
        need_cc(arch)
        key = (name, arch, static, libs)
        if key not in cache:
            exe = out_dir / f"{name}-{arch}{'-static' if static else ''}"
            cmd = [CC[arch], "-O1", "-o", str(exe), str(GUEST_ASM / "c" / f"{name}.c"), *libs]
            if static:
                cmd.insert(1, "-static")
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode != 0:
                pytest.fail(f"{' '.join(cmd)} failed:\n{res.stderr}")
            cache[key] = exe
        return cache[key]
    return build


def make_root(dest: Path, arch: str, libs: tuple[str, ...] = ("libc.so.6", "libm.so.6")) -> Path:
    """A guest root with the interpreter and a few libraries copied from the cross sysroot into
    /lib, and a /data tree: hello.txt, sub/nested.txt, a decoy /etc/passwd."""
    need_cc(arch)
    lib = dest / "lib"
    lib.mkdir(parents=True, exist_ok=True)
    for name in (INTERP[arch], *libs):
        shutil.copy(SYSROOT[arch] / "lib" / name, lib / name)
    data = dest / "data"
    (data / "sub").mkdir(parents=True, exist_ok=True)
    (data / "hello.txt").write_text("hello world\nsecond line\n")
    (data / "sub" / "nested.txt").write_text("nested file\n")
    (dest / "etc").mkdir(exist_ok=True)
    (dest / "etc" / "passwd").write_text("guest decoy passwd\n")
    (dest / "bin").mkdir(exist_ok=True)
    return dest


def install(root: Path, exe: Path, name: str) -> str:
    """Copy a program into root/bin (executable); its guest path."""
    target = root / "bin" / name
    shutil.copy(exe, target)
    os.chmod(target, 0o755)
    return f"/bin/{name}"
