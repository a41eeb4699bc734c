"""Thread flags: one ``thread_info.flags`` word per task, as Linux has it (asm/thread_info.h).

Linux keeps the per-task "something to do on the way back to user" bits in one word and tests them
with ``test_thread_flag`` & co.; so does emukern (``Task.flags``).  Because every flag is a bit of
the same word, the trap log, ``info task``/``info kernel`` and ``break when TIF_SVE`` see each one by
its Linux name without knowing where it is used.

Bit positions follow arm64's asm/thread_info.h (RISC-V's TIF_RISCV_V_DEFER_RESTORE keeps its own
bit 12, free on arm64); the two arches number the shared flags differently in Linux, the model uses
one table for both.  The older spellings (``task.sigpending``, ``thread.tif_sve``,
``thread.v.defer_restore``) are views of this word, not separate state.
"""
from __future__ import annotations

from typing import Any, Protocol

TIF_SIGPENDING = 1 << 0             # a signal is pending: do_signal on the way out
TIF_NEED_RESCHED = 1 << 1           # (the model keeps need_resched per CPU: PerCpu.need_resched)
TIF_FOREIGN_FPSTATE = 1 << 3        # arm64: the CPU's FP registers are not this task's
TIF_RISCV_V_DEFER_RESTORE = 1 << 12  # RISC-V: restore (or discard) V state at exit to user
TIF_SVE = 1 << 23                   # arm64: SVE in use, EL0 SVE enabled
TIF_SVE_VL_INHERIT = 1 << 24        # arm64: the on-exec VL survives exec (PR_SVE_VL_INHERIT)
TIF_TAGGED_ADDR = 1 << 26           # arm64: the tagged address ABI (PR_SET_TAGGED_ADDR_CTRL)

# name -> bit, for the debugger (``break when TIF_SVE``), views and traces
TIF_FLAGS: dict[str, int] = {name: bit for name, bit in dict(globals()).items()
                             if name.startswith("TIF_") and isinstance(bit, int)}
# the flags each arch's model uses (shown by views even when clear)
ARCH_FLAGS: dict[str, tuple[str, ...]] = {
    "arm64": ("TIF_SIGPENDING", "TIF_FOREIGN_FPSTATE", "TIF_SVE", "TIF_SVE_VL_INHERIT", "TIF_TAGGED_ADDR"),
    "riscv64": ("TIF_SIGPENDING", "TIF_RISCV_V_DEFER_RESTORE"),
}


class HasThreadFlags(Protocol):
    flags: int


def test_thread_flag(task: HasThreadFlags, flag: int) -> bool:
    return bool(task.flags & flag)


def set_thread_flag(task: HasThreadFlags, flag: int) -> None:
    task.flags |= flag


def clear_thread_flag(task: HasThreadFlags, flag: int) -> None:
    task.flags &= ~flag


def update_thread_flag(task: HasThreadFlags, flag: int, value: bool) -> None:
    """Set the flag if ``value``, else clear it (Linux's update_thread_flag)."""
    task.flags = task.flags | flag if value else task.flags & ~flag


def test_and_clear_thread_flag(task: HasThreadFlags, flag: int) -> bool:
    was = bool(task.flags & flag)
    task.flags &= ~flag
    return was


def thread_flag_names(flags: int) -> list[str]:
    """The names of the flags set in a flags word, in bit order."""
    return [name for name, bit in sorted(TIF_FLAGS.items(), key=lambda kv: kv[1]) if flags & bit]


class FlagView:
    """A boolean attribute that is one bit of the owning task's flags word (the older spellings:
    ``thread.tif_sve``).  The owner object has a ``task`` attribute (the Task whose word it is)."""

    def __init__(self, flag: int) -> None:
        self.flag = flag

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self                 # (class access: the descriptor itself)
        return bool(obj.task.flags & self.flag)

    def __set__(self, obj: Any, value: bool) -> None:
        task = obj.task
        task.flags = task.flags | self.flag if value else task.flags & ~self.flag
