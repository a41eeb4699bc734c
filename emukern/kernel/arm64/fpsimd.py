"""arm64 FPSIMD/SVE state — arch/arm64/kernel/fpsimd.c.

(First version: eager FPSIMD switching, SVE enabled on first use; the seed-004 policies come next.)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.machine.trap import Trap

if TYPE_CHECKING:
    from emukern.kernel.kernel import Kernel
    from emukern.kernel.task import Task
    from emukern.machine.cpu_arm64 import Arm64Cpu


@dataclass
class Arm64Thread:
    fpsimd: dict[str, Any] | None = None
    tif_sve: bool = False
    vl: int = 256
    vl_onexec: int = 0


def setup(k: "Kernel") -> None:
    pass


def new_thread_state(k: "Kernel", task: "Task", parent: "Task | None", exec_: bool) -> Arm64Thread:
    th = Arm64Thread(vl=k.config.sve_vl)
    if parent is not None and parent.thread is not None:
        th.vl = parent.thread.vl
        th.fpsimd = parent.thread.fpsimd
    return th


def fpsimd_flush_thread(k: "Kernel", cpu: "Arm64Cpu", task: "Task") -> None:
    cpu.reset_fp()
    task.thread.tif_sve = False
    cpu.set_sve_el0(False)


def fpsimd_release_task(k: "Kernel", cpu: "Arm64Cpu", task: "Task") -> None:
    pass


def fpsimd_syscall_enter(k: "Kernel", cpu: "Arm64Cpu", task: "Task") -> None:
    pass


def fpsimd_exit_to_user(k: "Kernel", cpu: "Arm64Cpu", task: "Task") -> None:
    pass


def fpsimd_thread_switch_out(k: "Kernel", cpu: "Arm64Cpu", prev: "Task") -> None:
    if prev.alive:
        prev.thread.fpsimd = cpu.save_fp()
        cpu.charge(k.cost.fp_save)


def fpsimd_thread_switch_in(k: "Kernel", cpu: "Arm64Cpu", nxt: "Task") -> None:
    if nxt.thread.fpsimd is not None:
        cpu.load_fp(nxt.thread.fpsimd)
    else:
        cpu.reset_fp()
    cpu.charge(k.cost.fp_restore)
    cpu.set_sve_el0(nxt.thread.tif_sve)
    if nxt.thread.tif_sve:
        cpu.set_vl(nxt.thread.vl)


def do_sve_acc(k: "Kernel", cpu: "Arm64Cpu", task: "Task", trap: Trap) -> None:
    trap.handler = "do_sve_acc"
    if not k.config.has_sve:
        k.force_sig(cpu, task, E.SIGILL, trap, "SVE not supported")
        return
    cpu.charge(k.cost.sve_access_trap)
    task.thread.tif_sve = True
    cpu.set_vl(task.thread.vl)
    cpu.set_sve_el0(True)
    trap.decision = "TIF_SVE set, EL0 SVE enabled; the instruction re-executes"


def sve_prctl(k: "Kernel", cpu: "Arm64Cpu", task: "Task", option: int, arg: int) -> int | None:
    return None
