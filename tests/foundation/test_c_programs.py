"""Static ELF programs from another toolchain (GCC + glibc, pthreads) run under emukern exactly
as under qemu-user.  Skips only when a cross compiler is not installed (an installed one that fails is a failure);
the qemu-user comparison runs when qemu-user is installed."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from emukern.api import Machine

CC = {"riscv64": "riscv64-linux-gnu-gcc", "arm64": "aarch64-linux-gnu-gcc"}
QEMU = {"riscv64": "qemu-riscv64", "arm64": "qemu-aarch64"}


@pytest.mark.parametrize("arch", list(CC))
@pytest.mark.parametrize("cpus", [1, 3])
def test_gcc_glibc_static_pthreads(cguest, arch, cpus):
    exe = cguest("pthreads_hello", arch, "-lpthread")
    r = Machine(cpus=cpus).load(exe).run()
    assert r.exit_status == 3, (r.message, r.fault)
    assert b"counter=4000\n" in r.stdout
    assert r.syscalls["clone"] == 4 and sum(1 for t in r.tasks if t["pid"] == 1) == 5
    if shutil.which(QEMU[arch]):
        q = subprocess.run([QEMU[arch], str(exe)], capture_output=True, timeout=60)
        assert q.returncode == r.exit_status
        # argv[0] and pid differ by design (emukern: absolute path, pid 1); the rest must match
        strip = lambda b: b.split(b"\n", 1)[1]  # noqa: E731
        assert strip(q.stdout) == strip(r.stdout)


@pytest.fixture(scope="module")
def sve_elf(cguest):
    # an installed compiler that is broken (or has no SVE support) is a failure, not a skip
    return cguest("sve_autovec", "arm64", "-O3", "-march=armv8-a+sve")


@pytest.mark.parametrize("policy", ["legacy", "p1", "p1+p2"])
@pytest.mark.parametrize("vl", [128, 256])
def test_gcc_autovectorised_sve(sve_elf, policy, vl):
    r = Machine(policies={"arm64-sve": policy}, sve_vl=vl).load(sve_elf).run()
    assert r.exit_status == 0 and r.stdout == b"sum=249975020\n"    # 20 + sum(5i for i < 10000)
    assert r.traps["sve-access"] >= 1
    if shutil.which("qemu-aarch64"):
        q = subprocess.run(["qemu-aarch64", "-cpu", f"max,sve{vl}=on", str(sve_elf)], capture_output=True,
                           timeout=60)
        assert q.stdout == r.stdout
