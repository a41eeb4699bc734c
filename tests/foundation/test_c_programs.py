"""Static ELF programs from another toolchain (GCC + glibc, pthreads) run under emukern exactly
as under qemu-user.  Skips when the cross compilers or qemu-user are not installed."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from emukern.api import Machine

CC = {"riscv64": "riscv64-linux-gnu-gcc", "arm64": "aarch64-linux-gnu-gcc"}
QEMU = {"riscv64": "qemu-riscv64", "arm64": "qemu-aarch64"}


@pytest.fixture(scope="module")
def built(tmp_path_factory, request):
    from emukern.pytest_plugin import GUEST_ASM
    out = {}
    d = tmp_path_factory.mktemp("cprog")
    for arch, cc in CC.items():
        if shutil.which(cc) is None:
            continue
        exe = d / f"pthreads_hello-{arch}"
        res = subprocess.run([cc, "-O2", "-static", "-o", str(exe), str(GUEST_ASM / "c" / "pthreads_hello.c"),
                              "-lpthread"], capture_output=True, text=True)
        if res.returncode == 0:
            out[arch] = exe
    return out


@pytest.mark.parametrize("arch", list(CC))
@pytest.mark.parametrize("cpus", [1, 3])
def test_gcc_glibc_static_pthreads(built, arch, cpus):
    if arch not in built:
        pytest.skip(f"{CC[arch]} (Debian gcc cross compiler + glibc) is not installed")
    r = Machine(cpus=cpus).load(built[arch]).run()
    assert r.exit_status == 3, (r.message, r.fault)
    assert b"counter=4000\n" in r.stdout
    assert r.syscalls["clone"] == 4 and sum(1 for t in r.tasks if t["pid"] == 1) == 5
    if shutil.which(QEMU[arch]):
        q = subprocess.run([QEMU[arch], str(built[arch])], capture_output=True, timeout=60)
        assert q.returncode == r.exit_status
        # argv[0] and pid differ by design (emukern: absolute path, pid 1); the rest must match
        strip = lambda b: b.split(b"\n", 1)[1]  # noqa: E731
        assert strip(q.stdout) == strip(r.stdout)
