"""Landlock (emukern/kernel/syscalls/landlock.py): emukern answers as a Linux kernel built
without CONFIG_SECURITY_LANDLOCK -- ENOSYS for all three calls, whatever the arguments -- and
does so by name (the calls are counted as landlock_*, not as unknown numbers).
guest_asm/c/landlock_probe.c prints the same under qemu-user (qemu 7.2 does not pass the calls
to the host kernel, so this agreement is qemu's own ENOSYS, not the host's Landlock)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from emukern.api import Machine

ARCHES = ["arm64", "riscv64"]
QEMU = {"riscv64": "qemu-riscv64", "arm64": "qemu-aarch64"}
EXPECTED = "".join(f"{n:<26} -1 errno=38\n" for n in
                   ("abi version", "create ruleset", "create bad flags", "add rule", "restrict self"))


@pytest.mark.parametrize("arch", ARCHES)
def test_landlock_is_enosys_by_name(cguest, arch):
    exe = cguest("landlock_probe", arch)
    r = Machine(arch=arch).load(exe, []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == EXPECTED
    assert r.unknown_syscalls == {}
    assert (r.syscalls["landlock_create_ruleset"], r.syscalls["landlock_add_rule"],
            r.syscalls["landlock_restrict_self"]) == (3, 1, 1)
    if shutil.which(QEMU[arch]) is not None:
        q = subprocess.run([QEMU[arch], str(exe)], capture_output=True, timeout=120)
        assert q.stdout.decode() == EXPECTED
