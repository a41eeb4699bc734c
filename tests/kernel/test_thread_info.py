"""kernel/thread_info.py: one thread flags word per task, and everything that reads it."""
from __future__ import annotations

import pytest

from emukern.kernel import thread_info as TI
from emukern.kernel.task import Task


def _task() -> Task:
    return Task(tid=1, tgid=1, parent=None, mm=None, files=None)   # type: ignore[arg-type]


def test_flags_are_bits_of_one_word_with_linux_names():
    bits = list(TI.TIF_FLAGS.values())
    assert len(set(bits)) == len(bits) and all(b & (b - 1) == 0 for b in bits)   # distinct single bits
    assert {"TIF_SIGPENDING", "TIF_FOREIGN_FPSTATE", "TIF_SVE", "TIF_SVE_VL_INHERIT",
            "TIF_RISCV_V_DEFER_RESTORE"} <= set(TI.TIF_FLAGS)
    for names in TI.ARCH_FLAGS.values():
        assert set(names) <= set(TI.TIF_FLAGS)


def test_set_clear_test_and_clear():
    t = _task()
    assert t.flags == 0 and not TI.test_thread_flag(t, TI.TIF_SVE)
    TI.set_thread_flag(t, TI.TIF_SVE)
    TI.set_thread_flag(t, TI.TIF_SIGPENDING)
    assert t.flags == TI.TIF_SVE | TI.TIF_SIGPENDING
    assert TI.thread_flag_names(t.flags) == ["TIF_SIGPENDING", "TIF_SVE"]
    assert TI.test_and_clear_thread_flag(t, TI.TIF_SVE) is True
    assert TI.test_and_clear_thread_flag(t, TI.TIF_SVE) is False
    TI.update_thread_flag(t, TI.TIF_FOREIGN_FPSTATE, True)
    TI.clear_thread_flag(t, TI.TIF_SIGPENDING)
    assert t.flags == TI.TIF_FOREIGN_FPSTATE


def test_old_spellings_are_views_of_the_word():
    from emukern.kernel.arch.arm64.fpsimd import Arm64Thread
    from emukern.kernel.arch.riscv.vector import VState
    t = _task()
    t.sigpending = True
    assert t.flags == TI.TIF_SIGPENDING
    th = Arm64Thread(task=t)
    th.tif_sve = True
    th.tif_sve_vl_inherit = True
    assert t.flags == TI.TIF_SIGPENDING | TI.TIF_SVE | TI.TIF_SVE_VL_INHERIT
    TI.clear_thread_flag(t, TI.TIF_SVE)
    assert th.tif_sve is False and th.tif_sve_vl_inherit is True
    v = VState(task=t)
    TI.set_thread_flag(t, TI.TIF_RISCV_V_DEFER_RESTORE)
    assert v.defer_restore is True
    v.defer_restore = False
    assert not t.flags & TI.TIF_RISCV_V_DEFER_RESTORE


SVE_LOOP = """
.text
.globl _start
_start:
    mov x8, #172        // getpid, before any SVE: no TIF_SVE
    svc #0
    rdvl x0, #1         // first SVE instruction: do_sve_acc sets TIF_SVE
    mov x8, #172
    svc #0
    mov x0, #0
    mov x8, #93
    svc #0
"""


def test_trap_log_records_the_flags_word(run_guest):
    r, m = run_guest(SVE_LOOP, arch="arm64")
    assert r.exit_code == 0, r.message
    log = list(m.kernel.trap_log)
    kinds = [(rec.kind, rec.handler, rec.tif) for rec in log]
    first, sve, second = log[0], log[1], log[2]
    assert first.handler == "getpid" and "TIF_SVE" not in first.tif
    assert sve.handler == "do_sve_acc" and "TIF_SVE" in sve.tif, kinds
    assert second.handler == "getpid" and "TIF_SVE" in second.tif, kinds
