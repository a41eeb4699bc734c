"""`break when` on thread flags: every TIF_* flag of the task's flags word, by its Linux name."""
from __future__ import annotations

import pytest

from debug_testutil import ARM, RV


@pytest.mark.parametrize("cond", ["TIF_SVE", "tif_sve", "TIF_SVE-changes", "thread_flags!=0"])
def test_break_when_a_thread_flag(debug_script, cond):
    rc, out = debug_script(ARM, [f"break when {cond}", "continue", "info kernel", "continue"])
    assert rc == 0
    assert "TIF_SVE=set" in out.split("info kernel", 1)[1]
    assert "do_sve_acc" in out


def test_riscv_defer_restore_flag_is_a_known_condition(debug_script):
    # set at syscall entry and consumed at exit to user inside the same trap, so it is clear
    # whenever a trap has returned; the name is known and the views show it
    rc, out = debug_script(RV, ["break when TIF_RISCV_V_DEFER_RESTORE", "break trap syscall",
                                "continue", "info task"])
    assert rc == 0
    assert "unknown" not in out.split("info task", 1)[0].lower()
    assert "TIF_RISCV_V_DEFER_RESTORE=clear" in out.split("info task", 1)[1]
