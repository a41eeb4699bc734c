"""syscalls.arch_riscv: generated from the kernel mixins."""
from __future__ import annotations
from typing import TYPE_CHECKING
from emukern.kernel import errno as E
if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_riscv_hwprobe(k: "Kernel", cpu, task, pairs, count, cpusetsize, cpus, flags, *a):
    if k.config.arch != "riscv64":
        return -E.ENOSYS            # 258 is an arch-specific slot that only RISC-V fills
    from emukern.kernel.riscv.hwprobe import do_riscv_hwprobe
    return do_riscv_hwprobe(k, cpu, task, pairs, count, cpusetsize, cpus, flags)


def sys_riscv_flush_icache(k: "Kernel", cpu, task, start, end, flags, *a):
    """arch/riscv/kernel/sys_riscv.c: EINVAL for flags other than SYS_RISCV_FLUSH_ICACHE_LOCAL;
    otherwise 0.  Nothing to flush here: Unicorn drops the translations of code a store
    writes (self-modifying code is caught when it happens), which is what fence.i and this
    call give a RISC-V program."""
    if k.config.arch != "riscv64":
        return -E.ENOSYS            # 259 is an arch-specific slot that only RISC-V fills
    if flags & ~1:
        return -E.EINVAL
    cpu.charge(k.cost.syscall_body)
    return 0
