"""The syscall layer: one module per Linux file the calls live in (gVisor's
pkg/sentry/syscalls/linux groups them the same way), each call a free function
``sys_<name>(k, cpu, task, a0..a5)`` of the kernel it runs in.

Handlers return the value for a0/x0 (negative errno on failure) or :data:`BLOCK` to sleep; a
blocked syscall is re-run from the start when the task is woken, like Linux's wait loops.  The
long read/write loops may also return ``PREEMPTED`` (kernel/preempt.py): switched out at a
preemption point, the call continues from its recorded progress when switched back in.
:mod:`emukern.kernel.syscalls.table` builds the number -> handler table from every ``sys_*``
of these modules and the arch's own rows (kernel/arch/*/syscalls.py).

This package's own namespace holds only the uapi numbers the modules share, so importing it
costs nothing and creates no cycle.
"""
from __future__ import annotations

from emukern.kernel.syscalls.numbers import SYSCALL_NAMES, SYSCALL_NUMBERS  # noqa: F401
from emukern.kernel.sysret import BLOCK  # noqa: F401  (the handlers' "sleep" return value)

# clone flags
CLONE_VM, CLONE_FS, CLONE_FILES, CLONE_SIGHAND = 0x100, 0x200, 0x400, 0x800
CLONE_THREAD, CLONE_SETTLS, CLONE_PARENT_SETTID = 0x10000, 0x80000, 0x100000
CLONE_CHILD_CLEARTID, CLONE_CHILD_SETTID = 0x200000, 0x1000000
# futex
FUTEX_WAIT, FUTEX_WAKE, FUTEX_PRIVATE = 0, 1, 128
FUTEX_WAIT_BITSET, FUTEX_WAKE_BITSET = 9, 10
# mmap
PROT_READ, PROT_WRITE, PROT_EXEC = 1, 2, 4
MAP_SHARED, MAP_PRIVATE, MAP_FIXED, MAP_ANONYMOUS = 1, 2, 0x10, 0x20
O_ACCMODE, O_WRONLY, O_RDWR, O_NONBLOCK, O_CLOEXEC = 3, 1, 2, 0x800, 0x80000
AT_FDCWD = -100
WNOHANG = 1


def prot_str(prot: int) -> str:
    return ("r" if prot & PROT_READ else "-") + ("w" if prot & PROT_WRITE else "-") + ("x" if prot & PROT_EXEC else "-")



