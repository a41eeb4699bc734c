"""pipe2's O_NONBLOCK and O_CLOEXEC and fcntl's F_GETFL/F_SETFL O_NONBLOCK on pipes
(kernel/syscalls/pipe.py, files.py PipeEnd), with guest_asm/c/pipe_flags.c: what qemu-user (the
host kernel) prints for the same binary, then the execve part inside a guest root."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from emukern.api import Machine

QEMU = {"riscv64": "qemu-riscv64", "arm64": "qemu-aarch64"}
BEFORE_EXEC = """\
nb F_GETFL r=0x800 w=0x801
nb empty read: -1 Resource temporarily unavailable
nb fill: 65536 bytes, then Resource temporarily unavailable
nb read: 100
after F_SETFL 0: r=0 w=0x801
F_SETFL O_NONBLOCK read: -1 Resource temporarily unavailable F_GETFL=0x800
cloexec F_GETFD r=1 w=1; plain F_GETFD 0
"""
AFTER_EXEC = """\
after exec: fd cloexec Bad file descriptor
after exec: fd cloexec Bad file descriptor
after exec: fd plain open
after exec: fd plain open
"""


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_pipe_flags(cguest, tmp_path, arch):
    exe = cguest("pipe_flags", arch)
    root = tmp_path / "root"
    (root / "bin").mkdir(parents=True)
    shutil.copy(exe, root / "bin" / "pipe_flags")
    r = Machine(arch=arch, root=str(root)).load(root / "bin" / "pipe_flags", ["/bin/pipe_flags"]).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == BEFORE_EXEC + AFTER_EXEC


@pytest.mark.qemu
@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_pipe_flags_match_qemu(cguest, arch):
    q = shutil.which(QEMU[arch])
    if q is None:
        pytest.skip(f"{QEMU[arch]} (qemu-user) is not installed")
    exe = cguest("pipe_flags", arch)
    p = subprocess.run([q, str(exe)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0
    assert p.stdout == BEFORE_EXEC
    assert Machine(arch=arch).load(exe, []).run().stdout.decode() == BEFORE_EXEC
