"""clone3 (emukern/kernel/syscalls/fork.py: sys_clone3 onto kernel_clone) with
guest_asm/c/clone3_probe.c on both architectures: the struct-size checks (EINVAL below 64
bytes, E2BIG past a page or for non-zero bytes past the 88 this kernel knows), the field and flag
checks of copy_clone_args_from_user / clone3_args_valid / copy_process, a fork-like child (exit
status, CLONE_PARENT_SETTID / CLONE_CHILD_SETTID, CLONE_CLEAR_SIGHAND), a child with exit signal
0, and a thread on its own stack (stack + stack_size) with its own TLS pointer.

The expected output is Linux 6.12's answers read off kernel/fork.c; qemu-user 7.2 is no oracle
here: it has no clone3 (ENOSYS for every call, the same binary's children never start)."""
from __future__ import annotations

from pathlib import Path

import pytest

from emukern.api import Machine

EXPECTED = (Path(__file__).parent / "data" / "clone3_probe.expected").read_text()


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_clone3_probe_matches_linux(cguest, arch):
    r = Machine(arch=arch).load(cguest("clone3_probe", arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == EXPECTED
    assert r.unknown_syscalls == {}
    assert r.syscalls["clone3"] == 27 and "clone" not in r.syscalls
