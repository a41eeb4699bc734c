"""The arm64 tagged address ABI (Documentation/arch/arm64/tagged-address-abi.rst;
arch/arm64/kernel/process.c set_tagged_addr_ctrl / get_tagged_addr_ctrl).

The hardware half is the machine's: EL0 data accesses ignore the top byte (TBI0, which Linux
always sets: native/a64_stub.c's TLB fill), so a program may keep a tag in bits 63:56 of any
pointer it dereferences itself.  The kernel half is here: by default a tagged pointer handed to
a syscall is not a user address (access_ok fails: EFAULT); after
``prctl(PR_SET_TAGGED_ADDR_CTRL, PR_TAGGED_ADDR_ENABLE, 0, 0, 0)`` the thread's TIF_TAGGED_ADDR
makes the kernel untag the pointers it is given.  The flag is inherited by fork and clone and
cleared by execve (flush_tagged_addr_state); ``abi.tagged_addr_disabled`` = 1 refuses to enable
it.  The machine has no MTE, so no PR_MTE_* bit is valid.

emukern untags in the address space (``MmStruct.tagged_addr``, the machine's TBI switch), which every thread of a
process shares: once one thread has enabled the ABI, the kernel untags for its siblings too
(Linux would still EFAULT a sibling that did not enable it).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emukern.kernel import errno as E
from emukern.kernel.sysctl import SysctlEntry
from emukern.kernel.thread_info import TIF_TAGGED_ADDR

if TYPE_CHECKING:
    from emukern.kernel.task import Task

PR_SET_TAGGED_ADDR_CTRL, PR_GET_TAGGED_ADDR_CTRL = 55, 56
PR_TAGGED_ADDR_ENABLE = 1


def setup(k: Any) -> None:
    """/proc/sys/abi/tagged_addr_disabled (0: the ABI may be enabled)."""
    k.sysctl.register(SysctlEntry("abi.tagged_addr_disabled", 0, mode=0o644, minimum=0, maximum=1,
                                  kind="int"))


def get_tagged_addr_ctrl(task: "Task") -> int:
    return PR_TAGGED_ADDR_ENABLE if task.flags & TIF_TAGGED_ADDR else 0


def set_tagged_addr_ctrl(k: Any, task: "Task", arg: int) -> int:
    """The new control word, or -EINVAL: only PR_TAGGED_ADDR_ENABLE is valid (no MTE), and
    enabling is refused while abi.tagged_addr_disabled is set."""
    if arg & ~PR_TAGGED_ADDR_ENABLE:
        return -E.EINVAL
    if arg & PR_TAGGED_ADDR_ENABLE and k.sysctl.get("abi.tagged_addr_disabled"):
        return -E.EINVAL
    if arg & PR_TAGGED_ADDR_ENABLE:
        task.flags |= TIF_TAGGED_ADDR
        task.mm.tagged_addr = True
    else:
        task.flags &= ~TIF_TAGGED_ADDR
    return 0


def tagged_addr_prctl(k: Any, task: "Task", option: int, a2: int, a3: int, a4: int, a5: int) -> int | None:
    """prctl's two options (None: not one of them); the unused arguments must be 0."""
    if option == PR_SET_TAGGED_ADDR_CTRL:
        if a3 or a4 or a5:
            return -E.EINVAL
        return set_tagged_addr_ctrl(k, task, a2)
    if option == PR_GET_TAGGED_ADDR_CTRL:
        if a2 or a3 or a4 or a5:
            return -E.EINVAL
        return get_tagged_addr_ctrl(task)
    return None


def inherit_tagged_addr(child: "Task", parent: "Task | None") -> None:
    """dup_task_struct copies the thread flags: a forked or cloned task keeps TIF_TAGGED_ADDR."""
    if parent is not None and parent.flags & TIF_TAGGED_ADDR:
        child.flags |= TIF_TAGGED_ADDR
        child.mm.tagged_addr = True


def flush_tagged_addr_state(task: "Task") -> None:
    """execve: the new program starts without the ABI (its fresh mm untags nothing)."""
    task.flags &= ~TIF_TAGGED_ADDR
