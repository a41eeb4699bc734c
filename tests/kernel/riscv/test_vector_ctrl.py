"""PR_RISCV_V_SET_CONTROL / PR_RISCV_V_GET_CONTROL (Documentation/arch/riscv/vector.rst,
riscv_v_vstate_ctrl_set_current / riscv_v_vstate_ctrl_init in arch/riscv/kernel/vector.c):
current / next-exec / inherit, fork and exec, and SIGILL (exit status 132) on denied use."""
from __future__ import annotations

import pytest

from emukern.kernel import errno as E
from emukern.loader.asm import assemble
from vabi_helpers import GUEST, needs_llvm, parse_snaps, run_prog, words, zeroed

pytestmark = needs_llvm
OFF, ON, INHERIT = 1, 2, 0x10


@pytest.fixture(scope="module")
def elf() -> str:
    return str(assemble(GUEST / "vabi_ctrl.S", "riscv64"))


@pytest.fixture(scope="module")
def root(elf, tmp_path_factory) -> str:
    """A guest root holding the program as /bin/vabi_ctrl: execve resolves only inside it."""
    import shutil
    r = tmp_path_factory.mktemp("root")
    (r / "bin").mkdir()
    shutil.copy(elf, r / "bin" / "vabi_ctrl")
    return str(r)


EXE = "/bin/vabi_ctrl"


def test_set_get_errors_fork_and_exec_without_inherit(elf, root):
    r, m = run_prog(elf, ["1", EXE], 256, root=root)
    res = words(r.stdout)
    assert res[0] == ON                     # riscv_v_default_allow=1 at exec
    assert res[1] == -E.EINVAL              # bits outside PR_RISCV_V_VSTATE_CTRL_MASK
    assert res[2] == -E.EINVAL              # cur = 3
    assert res[3] == -E.EINVAL              # next = 3
    assert res[4] == -E.EPERM               # cur ON -> OFF is not allowed
    assert res[5] == 0                      # cur DEFAULT (keep ON), next OFF
    assert res[6] == ON | OFF << 2
    assert res[7] == ON | OFF << 2          # fork copies vstate_ctrl
    assert res[8] == 256 // 8               # V still usable now (vsetvli e8 m1 -> VLMAX)
    # execve: cur = next (OFF), next reset to DEFAULT (no inherit) ...
    assert res[9] == OFF
    # ... and the new image's first vector instruction is refused: SIGILL
    assert r.exit_status == 132 and r.signal == 4
    assert r.fault["signame"] == "SIGILL"


def test_inherit_survives_exec(elf, root):
    r, m = run_prog(elf, ["3", EXE], 128, root=root)
    assert r.exit_status == 0, r.message
    res = words(r.stdout)
    assert res[:2] == [0, ON | OFF << 2 | INHERIT]
    # after exec: cur = next = OFF, and with inherit next stays OFF
    assert res[2] == OFF | OFF << 2 | INHERIT
    assert res[3] == 0                      # any thread may turn V on
    assert res[4] == ON                     # SET replaces next and inherit too
    assert res[5] == 128 // 8


def test_default_deny_fork_child_sigill_then_enable(elf, root):
    r, m = run_prog(elf, ["5", EXE], 512, root=root, riscv_v_default_allow=False)
    assert r.exit_status == 0, r.message
    res = words(r.stdout)
    assert res[0] == OFF
    assert res[1] == 4                      # the child was killed by SIGILL (wait status)
    assert res[2] == 0                      # OFF while OFF is fine
    assert res[3] == 0                      # turn it on
    assert res[4] == 512 // 8


def test_default_deny_sigill(elf, root):
    r, m = run_prog(elf, ["2", EXE], 256, root=root, riscv_v_default_allow=False)
    assert words(r.stdout) == [OFF]
    assert r.exit_status == 132
    log = [t for t in m.trap_log if t.kind == "illegal"]
    assert log and log[-1].handler == "riscv_v_first_use_handler"


def test_allowed_first_use(elf, root):
    r, m = run_prog(elf, ["2", EXE], 256, root=root)
    assert r.exit_status == 0 and words(r.stdout) == [ON]
    assert m.kernel.init_task.thread.v.stats["first_use"] == 1


@pytest.mark.parametrize("impl", ("eager", "deferred"))
def test_fork_child_starts_with_v_off_and_a_zeroed_context(impl):
    # copy_thread: the child's status.VS is Off and its context is cleared, so its first vector
    # access traps and it reads zeros, not the parent's live registers
    r, m = run_prog("vabi_state.S", ["4"], 256, impl, 1)
    assert r.exit_status == 0, r.message
    (child,) = parse_snaps(r.stdout, 256)
    assert child == zeroed(256)
    kids = [t for t in m.kernel.tasks.values() if t is not m.kernel.init_task]
    assert kids[0].thread.v.stats["first_use"] == 1
