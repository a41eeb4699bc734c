"""pselect6 <-> fs/select.c (core_sys_select, do_select, poll_select_finish).

glibc's select() and pselect() are pselect6 on arm64 and riscv64.  The waiting itself is
ppoll's (kernel/signal/syscalls.py: poll_select_begin / poll_select_sleep): the same timeout
and temporary-sigmask rules, the same sleep on every polled file's wait queue, and a signal
ends it with -ERESTARTNOHAND (syscall_interrupted), as Linux's do_select does.
"""
from __future__ import annotations

from typing import Any

from emukern.kernel import errno as E
from emukern.kernel.sysret import BLOCK


ERESTARTNOHAND = 514
_IN, _PRI, _OUT, _ERR, _HUP = 0x1, 0x2, 0x4, 0x8, 0x10
_RDNORM, _RDBAND, _WRNORM, _WRBAND = 0x40, 0x80, 0x100, 0x200
POLLIN_SET = _RDNORM | _RDBAND | _IN | _HUP | _ERR
POLLOUT_SET = _WRBAND | _WRNORM | _OUT | _ERR
POLLEX_SET = _PRI
DEFAULT_POLLMASK = _IN | _OUT | _RDNORM | _WRNORM


def _max_fds(files: Any) -> int:
    """fdt->max_fds, what core_sys_select clips n to: the table starts with NR_OPEN_DEFAULT
    (64) slots and grows by alloc_fdtable's rule (at least 256, a power of two) once a
    descriptor at or above 64 is installed.  (emukern's table does not keep its high-water
    mark, so the size follows the highest descriptor open now.)"""
    top = max(files.fds, default=0) if files is not None else 0
    if top < 64:
        return 64
    n = 256
    while n <= top:
        n *= 2
    return n


