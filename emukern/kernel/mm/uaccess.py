"""copy_from_user / copy_to_user: where syscalls move a *buffer* between user memory and the
kernel (read, write, readv, getrandom, ...), charged per byte, so an architecture can route large
copies through its own path (RISC-V: kernel-mode vector,
:mod:`emukern.kernel.arch.riscv.kernel_mode_vector`) exactly where Linux's ``raw_copy_*_user`` does.

Small fixed-size structures (a timespec, a sigset, a siginfo, a signal frame) are read and
written through the task's mm accessors directly (``task.mm.read``/``write``, about 150 sites):
the cost model has always counted those inside the syscall's body cost, and charging them here
per byte would change every recorded cycle figure.  Both kinds fault the same way.

A user address that is not mapped raises MemoryFault, which the syscall layer turns into -EFAULT.

The long loops of read/write (kernel/preempt.py's page_loop) copy a page at a time with
``copy_from_user_chunk``/``copy_to_user_chunk``, which an interrupt can stop midway under the
full preemption model; the continuation finishes the same chunk when the task is switched back in.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from emukern.errors import MemoryFault

if TYPE_CHECKING:
    from emukern.kernel.types import Kernel
    from emukern.kernel.preempt import SyscallResume
    from emukern.kernel.task import Task
    from emukern.machine.cpu_base import Cpu
from emukern.kernel.mm import mmap as mm_mmap
from emukern.kernel import preempt as P
from emukern.kernel.preempt import PREEMPTED


def copy_from_user(k: "Kernel", cpu: "Cpu", task: "Task", addr: int, n: int) -> bytes:
    """n bytes from user memory; charges the copy (the arch path's cycles, or syscall_per_byte)."""
    if n and k.arch.vector_usercopy is not None:
        got = k.arch.vector_usercopy(cpu, task, addr, n, None)
        if got is not None:
            return got
    data = task.mm.read(addr, n) if n else b""
    cpu.charge(k.cost.syscall_per_byte * len(data))
    return data


def copy_to_user(k: "Kernel", cpu: "Cpu", task: "Task", addr: int, data: bytes) -> None:
    """Write ``data`` to user memory; charges the copy like copy_from_user."""
    if data and k.arch.vector_usercopy is not None:
        if k.arch.vector_usercopy(cpu, task, addr, len(data), data) is not None:
            return
    task.mm.write(addr, data)
    cpu.charge(k.cost.syscall_per_byte * len(data))


# ---- copies a preemption can stop midway (kernel/preempt.py) --------------------------------------
def _scalar_steps(k: "Kernel", cpu: "Cpu", task: "Task", n: int, res: "SyscallResume", what: str,
                  move: Any) -> bool:
    """The scalar copy loop over n bytes from res.chunk_done on, ``move(off, m)`` doing m bytes.
    Under the full model an interrupt whose deadline falls inside the copy stops it at the
    64-byte step it lands in (the loop's iteration); otherwise the copy runs to its end and the
    tick waits for the caller's next point.  False when preempted (res.chunk_done records where)."""
    per = k.cost.syscall_per_byte
    off = res.chunk_done
    while off < n:
        m = n - off
        if per and P.irq_preemptible(k, task) and P.tick_due_within(k, cpu, per * m):
            left = k.percpu[cpu.index].next_tick - cpu.now
            steps = max(1, -(-left // (per * P.SCALAR_STEP)))
            m = min(m, steps * P.SCALAR_STEP)
        move(off, m)
        cpu.charge(per * m)
        off += m
        if off < n and P.preempt_point(k, cpu, task, P.IRQ, what):
            res.chunk_done = off
            return False
    res.chunk_done = 0
    return True


def copy_from_user_chunk(k: "Kernel", cpu: "Cpu", task: "Task", addr: int, n: int,
                         res: "SyscallResume", what: str) -> Any:
    """copy_from_user of one chunk of a long loop (at most a page): the bytes, or PREEMPTED with
    the part already copied kept in ``res`` (the continuation copies the rest)."""
    if n and k.arch.vector_usercopy is not None:
        got = k.arch.vector_usercopy(cpu, task, addr, n, None, res)
        if got is not None:
            return got
    if res.part is None:
        res.part = bytearray()
    part = res.part

    def move(off: int, m: int) -> None:
        part.extend(task.mm.read(addr + off, m))
    if not _scalar_steps(k, cpu, task, n, res, what, move):
        return PREEMPTED
    res.part = None
    return bytes(part)


def copy_to_user_chunk(k: "Kernel", cpu: "Cpu", task: "Task", addr: int, data: bytes,
                       res: "SyscallResume", what: str, vector: bool = True) -> Any:
    """copy_to_user of one chunk: True, or PREEMPTED (res.chunk_done bytes of it are written).
    ``vector`` False: a scalar-only routine (clear_user, which /dev/zero's iov_iter_zero uses)."""
    if data and vector and k.arch.vector_usercopy is not None:
        got = k.arch.vector_usercopy(cpu, task, addr, len(data), data, res)
        if got is not None:
            return got if got is PREEMPTED else True

    def move(off: int, m: int) -> None:
        task.mm.write(addr + off, data[off: off + m])
    return True if _scalar_steps(k, cpu, task, len(data), res, what, move) else PREEMPTED


def copy_to_user_stack(k: "Kernel", cpu: Any, task: "Task", addr: int, data: bytes | bytearray) -> bool:
    """copy_to_user onto the user stack (a signal frame), growing the stack as a fault on it
    would (expand_stack); False when it cannot be written (setup_rt_frame's -EFAULT)."""
    if addr < 0 or addr + len(data) > 2**64:
        return False
    try:
        task.mm.write(addr, data)
        return True
    except MemoryFault:
        pass
    if not mm_mmap.expand_stack(k, task, addr):
        return False
    cpu.sync_mm()
    try:
        task.mm.write(addr, data)
        return True
    except MemoryFault:
        return False
