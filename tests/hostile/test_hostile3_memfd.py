"""Hostile-guest leftovers, item 2: a memfd mapped MAP_SHARED|PROT_WRITE (ENODEV before) shares
its pages with read/write on the descriptor, with other mappings and across fork; memfd_create's
MFD_CLOEXEC/MFD_ALLOW_SEALING and the seals (F_ADD_SEALS/F_GET_SEALS, F_SEAL_WRITE/SHRINK/GROW/
SEAL with EPERM/EBUSY/EINVAL).  guest_asm/c/hostile/memfd_shared.expected is what qemu-user
printed for the probe on both architectures (host Linux 6.18: a read-only shared mapping of a
writable memfd still blocks F_SEAL_WRITE, as since 6.7)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from emukern.api import Machine
from emukern.pytest_plugin import GUEST_ASM

ARCHES = ("riscv64", "arm64")
QEMU = {"riscv64": "qemu-riscv64", "arm64": "qemu-aarch64"}
EXPECTED = (GUEST_ASM / "c" / "hostile" / "memfd_shared.expected").read_text().splitlines()


@pytest.mark.parametrize("arch", ARCHES)
def test_memfd_shared_mapping_and_seals(cprog, arch):
    m = Machine(arch=arch, mem_limit=256 << 20)
    r = m.load(cprog("memfd_shared", arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode().splitlines() == EXPECTED
    # the memfds' pages went back with their last descriptors: what is left is the program's
    # own mappings
    assert m.kernel.mem.used < 2 << 20


@pytest.mark.parametrize("arch", ARCHES)
def test_memfd_shared_matches_qemu_user(cprog, arch):
    if shutil.which(QEMU[arch]) is None:
        pytest.skip(f"{QEMU[arch]} is not installed")
    out = subprocess.run([QEMU[arch], str(cprog("memfd_shared", arch))], capture_output=True,
                         text=True, timeout=120).stdout.splitlines()
    assert out == EXPECTED
