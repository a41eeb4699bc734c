"""Issue 33 items 2 and 12: clone's flag word as Linux's kernel_clone/copy_process read it.

- The CSIGNAL byte is any value: an exit signal of 65..255 is accepted and, when the child
  exits, do_notify_parent sends nothing (it used to end the run with an internal error).
- copy_process's checks: CLONE_FS with CLONE_NEWNS, CLONE_THREAD without CLONE_SIGHAND and
  CLONE_SIGHAND without CLONE_VM are EINVAL, so clone(~0) is EINVAL (never EFAULT from the
  tid words it also asks for).
- A bad CLONE_PARENT_SETTID / CLONE_CHILD_SETTID pointer does not fail the call: the task exists
  when those words are written, and a failed put_user is ignored.
(qemu-user refuses most of these flag words itself, so the expected values are Linux's.)"""
from __future__ import annotations

import pytest

from emukern.api import Machine
from emukern.kernel import errno as E

ARCHES = ("riscv64", "arm64")
EXITED_7 = "ok status=0x700 waited=1"
EXPECTED = {
    "exit_sig_65": EXITED_7 + " sigchld=0",
    "exit_sig_100": EXITED_7 + " sigchld=0",
    "exit_sig_255": EXITED_7 + " sigchld=0",
    "exit_sig_0": EXITED_7 + " sigchld=0",
    "sighand_no_vm": str(-E.EINVAL),
    "fs_newns": str(-E.EINVAL),
    "all_ones": str(-E.EINVAL),
    "thread_no_sighand": str(-E.EINVAL),
    "bad_settid": EXITED_7 + " sigchld=1",
    "parent_settid": "1",
}


@pytest.mark.parametrize("arch", ARCHES)
def test_clone_flag_words_as_linux(cprog, arch):
    m = Machine()
    m.load(cprog("clone_flags", arch))
    r = m.run()
    assert r.exit_code == 0, r.message
    got = dict(line.split("=", 1) for line in r.stdout.decode().splitlines())
    assert got == EXPECTED
