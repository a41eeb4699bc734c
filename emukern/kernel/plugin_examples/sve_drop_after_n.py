"""Worked example of a policy plug-in: an arm64-sve variant that drops TIF_SVE after N syscalls.

Mark Brown's "arm64/sve: Performance improvements with SVE state saving" (v11) drops TIF_SVE at
syscall entry once a second (``sve_timeout``) has passed since the SVE access trap.  This variant
asks a different question: what if the kernel counted syscalls instead of time?  A task that
made N syscalls with TIF_SVE set since it last trapped stops paying ``sve_flush_live`` and
takes a new SVE access trap if it uses SVE again.

Use it::

    emukern run --plugin emukern.kernel.plugin_examples.sve_drop_after_n \\
        --policy arm64-sve=drop-after-n guest_asm/arm64/fp_pidbench.S 100 4

or copy this file, edit it and pass its path: ``--plugin my_policy.py``.  N is ``SYSCALLS``
below (the environment variable EMUKERN_SVE_DROP_N overrides it when the file is imported).

Everything the variant does not replace follows ``base="legacy"``: do_sve_acc does not record a
timeout and task_fpsimd_load drops TIF_SVE when it loads FPSIMD-only state, as before the patch.
"""
from __future__ import annotations

import os
from typing import Any

from emukern.kernel.plugins import builtin, register_variant
from emukern.kernel.arch.arm64 import fpsimd

SYSCALLS = int(os.environ.get("EMUKERN_SVE_DROP_N", "16"))
COUNTER = "plugin_syscalls_with_sve"        # kept in the task's instrumentation counters


def fpsimd_syscall_enter(k: Any, cpu: Any, task: Any) -> str | None:
    """Syscall entry: after SYSCALLS syscalls with TIF_SVE set, clear it and trap SVE again."""
    th = task.thread
    if not k.config.has_sve or not th.tif_sve:
        th.stats[COUNTER] = 0                 # TIF_SVE is clear: the next trap starts a new count
        return builtin("fpsimd_syscall_enter")(k, cpu, task)
    th.stats[COUNTER] += 1
    if th.stats[COUNTER] <= SYSCALLS:
        return builtin("fpsimd_syscall_enter")(k, cpu, task)   # flush as legacy does
    th.in_syscall = True
    th.tif_sve = False
    th.stats[COUNTER] = 0
    fpsimd.sve_user_disable(k, cpu)
    th.stats["drop_tif_sve_syscall"] += 1
    k.sve_stats["drop_tif_sve_syscall"] += 1
    fpsimd._last(k, cpu).to_save = fpsimd.FP_STATE_FPSIMD
    return f"drop-after-n: {SYSCALLS} syscalls with TIF_SVE: TIF_SVE cleared, EL0 SVE traps again"


VARIANT = register_variant(
    "arm64-sve", "drop-after-n", base="legacy",
    what=f"drop TIF_SVE at syscall entry after {SYSCALLS} syscalls with it set (instead of a 1 s timeout)",
    overrides={"fpsimd_syscall_enter": fpsimd_syscall_enter},
    origin="emukern.kernel.plugin_examples.sve_drop_after_n")
