"""Lazy FP on RISC-V: __switch_to_fpu saves the FP context only when sstatus.FS is Dirty
(fstate_save) and restores any context that is not Off (fstate_restore), marking it Clean.

Reference: arch/riscv/include/asm/switch_to.h (fstate_save, fstate_restore, __switch_to_fpu),
arch/riscv/kernel/process.c (arch_dup_task_struct saves the parent's live FP state before the copy).
"""
from __future__ import annotations

import shutil
import subprocess

import pytest

from emukern.api import Machine
from emukern.loader.asm import assemble
from emukern.machine.cpu_riscv import RiscvCpu
from emukern.machine.clock import Clock
from emukern.kernel.arch.riscv.arch import FS_CLEAN, FS_INITIAL

ROUNDS = 300


def _run(guest_asm, name: str, rounds: int = ROUNDS):
    m = Machine(arch="riscv64").load(guest_asm / "riscv" / name, [str(rounds)])
    r = m.run()
    return r, m.kernel


def test_fs_is_maintained_by_the_fp_unit():
    """The machine reports sstatus.FS as Unicorn's FP unit keeps it (at U-mode)."""
    cpu = RiscvCpu(0, Clock(10**9, 250, 10**8))
    assert cpu.fs == FS_INITIAL
    cpu.fs = FS_CLEAN
    assert cpu.fs == FS_CLEAN


def test_no_fp_use_means_no_fp_saves(guest_asm):
    r, k = _run(guest_asm, "lat_ctx.S")
    switches = sum(c["switches"] for c in r.cpus)
    assert r.exit_status == 0 and switches >= 2 * ROUNDS
    assert k.fp_saves == 0          # FS never Dirty: every fstate_save is skipped


def test_only_the_dirty_side_is_saved(guest_asm):
    """lat_ctx_fp: the child writes f1 every round (Dirty at each switch away), the parent only
    reads its f1 (Clean): one save per child switch-out, plus the parent's one at fork."""
    r, k = _run(guest_asm, "lat_ctx_fp.S")
    assert r.exit_status == 0, r.message
    child = next(t for t in r.tasks if t["tid"] == 2)
    assert k.fp_saves == child["nvcsw"] + 1, (k.fp_saves, child)


def test_lazy_fp_saves_cycles_against_eager(guest_asm):
    r_no_fp, _ = _run(guest_asm, "lat_ctx.S")
    r_fp, _ = _run(guest_asm, "lat_ctx_fp.S")
    # same pipe ping-pong; the FP version pays fp_save on the child's switches only
    from emukern.kernel.cost import CostTable
    saves = next(t for t in r_fp.tasks if t["tid"] == 2)["nvcsw"] + 1
    extra = r_fp.kernel_cycles - r_no_fp.kernel_cycles
    assert extra == saves * CostTable().fp_save


@pytest.mark.qemu
@pytest.mark.skipif(shutil.which("qemu-riscv64") is None, reason="qemu-user not installed")
def test_fp_contexts_survive_switches_like_qemu(guest_asm):
    elf = assemble(guest_asm / "riscv" / "lat_ctx_fp.S", "riscv64")
    q = subprocess.run(["qemu-riscv64", str(elf), str(ROUNDS)], capture_output=True, timeout=60)
    r, _ = _run(guest_asm, "lat_ctx_fp.S")
    assert q.returncode == 0 and r.exit_status == 0
    assert r.stdout == q.stdout
