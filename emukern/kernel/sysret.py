"""What a syscall handler returns, shared by every module that implements syscalls.

A handler returns the value for a0/x0 (a negative errno on failure) or :data:`BLOCK`: the task
sleeps and the call is re-run from the start when it is woken, like Linux's wait loops.  A leaf
module (it imports nothing of the kernel), so syscalls, epoll, signal and the scheduler all import
it at the top instead of importing each other inside functions.
"""
from __future__ import annotations

from typing import Any

U64 = (1 << 64) - 1


class _Block:
    def __repr__(self) -> str:
        return "BLOCK"


BLOCK: Any = _Block()


def s64(v: int) -> int:
    """A 64-bit register value as the signed long a syscall argument is."""
    v &= U64
    return v - (1 << 64) if v >> 63 else v
