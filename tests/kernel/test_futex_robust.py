"""Robust futex lists walked at exit, PI mutexes and set_robust_list's length check, through
glibc's own pthread code (guest_asm/c/robust_futex.c) on both arches.  qemu-user is no oracle
here: it does not implement set_robust_list, so its waiter sleeps forever."""
from __future__ import annotations

import pytest

from emukern.api import Machine


@pytest.mark.parametrize("arch", ["riscv64", "arm64"])
def test_owner_died_wakes_waiter_with_eownerdead(cguest, arch):
    exe = cguest("robust_futex", arch, "-lpthread")
    r = Machine(arch=arch).load(exe).run()
    assert r.exit_status == 0, (r.stdout, r.message)
    assert r.stdout == (b"robust: lock after owner died: EOWNERDEAD\nrobust: lock again: 0\n"
                        b"robust-pi: lock after owner died: EOWNERDEAD\nrobust-pi: lock again: 0\n"
                        b"set_robust_list(len 23): EINVAL\n")
