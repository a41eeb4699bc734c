"""RISC-V's own syscalls (arch/riscv/kernel/sys_riscv.c and sys_hwprobe.c): the arch-specific
slots 258 and 259 of the asm-generic table.  RiscvArch adds these rows to the syscall table
(ArchBase.SYSCALL_MODULES); on arm64 the same numbers have no handler and answer ENOSYS."""
from __future__ import annotations
from typing import TYPE_CHECKING
from emukern.kernel import errno as E
from emukern.kernel.arch.riscv.hwprobe import do_riscv_hwprobe
if TYPE_CHECKING:
    from emukern.kernel.types import Kernel


def sys_riscv_hwprobe(k: "Kernel", cpu, task, pairs, count, cpusetsize, cpus, flags, *a):
    return do_riscv_hwprobe(k, cpu, task, pairs, count, cpusetsize, cpus, flags)


def sys_riscv_flush_icache(k: "Kernel", cpu, task, start, end, flags, *a):
    """arch/riscv/kernel/sys_riscv.c: EINVAL for flags other than SYS_RISCV_FLUSH_ICACHE_LOCAL;
    otherwise 0.  Nothing to flush here: Unicorn drops the translations of code a store
    writes (self-modifying code is caught when it happens), which is what fence.i and this
    call give a RISC-V program."""
    if flags & ~1:
        return -E.EINVAL
    cpu.charge(k.cost.syscall_body)
    return 0
