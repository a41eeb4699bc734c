"""The narrow types the kernel's parts are written against.

Every part of the kernel takes the kernel it runs in as its first argument (``k``), the way
Linux's functions reach ``current`` and the per-CPU data.  They type that argument as
:class:`Kernel` below — a Protocol naming what the parts read — never as the concrete root
class (:class:`emukern.kernel.kernel.Kernel`), so no part imports the root and the import graph
stays a stack of layers (tests/foundation/test_shape.py checks it).
"""
from __future__ import annotations

from collections import Counter, deque
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from emukern.config import MachineConfig
    from emukern.kernel.cost import CostTable
    from emukern.kernel.policies import Policies
    from emukern.kernel.sysctl import SysctlTable
    from emukern.kernel.task import Task
    from emukern.machine.clock import Clock
    from emukern.machine.cpu_base import Cpu
    from emukern.machine.memory import MemoryPool


class Scheduler(Protocol):
    """What the parts of the kernel ask of the scheduler (kernel/sched.py)."""

    def select_cpu(self, task: "Task", new: bool = False) -> int: ...
    def enqueue(self, task: "Task", cpu_index: int, now: int) -> None: ...
    def wake_up(self, task: "Task", now: int, value: int | None = None) -> None: ...
    def wake_queue(self, wq: Any, now: int, nr: int | None = None, value: int | None = None) -> int: ...
    def add_timer(self, task: "Task", wake_at: int) -> bool: ...
    def account(self, cpu: "Cpu", task: "Task | None") -> int: ...
    def block_current(self, cpu: "Cpu", task: "Task", reason: str) -> None: ...
    def schedule(self, cpu: "Cpu") -> None: ...
    def tick_preempt(self, cpu: "Cpu", task: "Task", used: int, slice_cycles: int) -> bool: ...
    def yield_current(self, cpu: "Cpu") -> None: ...


class Kernel(Protocol):
    """The kernel as its parts see it: the machine it owns and the subsystems the root
    (:class:`emukern.kernel.kernel.Kernel`) composes.  Attributes not listed here are reached
    through ``__getattr__`` (typed ``Any``): the list grows as parts are typed strictly."""

    config: "MachineConfig"
    clock: "Clock"
    cost: "CostTable"
    policies: "Policies"
    sysctl: "SysctlTable"
    mem: "MemoryPool"
    cpus: "list[Cpu]"
    percpu: list[Any]
    tasks: "dict[int, Task]"
    init_pid_ns: Any                # kernel/pid.py: the initial pid namespace
    sched: Scheduler
    runloop: Any
    arch: Any
    vfs: Any
    procfs: Any
    trap_log: "deque[Any]"
    syscall_notes: list[str]
    warnings: "Counter[str]"
    exec_enoent: list[str]
    sve_stats: "Counter[str]"
    # state the entry code, the debugger's gates and the arch code write (Kernel documents each)
    _seq: int
    trap_gate: Any
    sync_gate: Any
    deferred_trap: Any
    deferred_pc: int | None
    parked_traps: int
    kernel_vector_regions: int
    fp_saves: int
    sve_area: Any
    sve_syscall_timeout: bool
    arm64_undef: Any
    id_regs: Any

    def warn_on(self, condition: bool, what: str) -> bool: ...
    def policy(self, name: str) -> str: ...
    def alloc_tid(self) -> int: ...
    def live_tasks(self) -> "list[Task]": ...
    def spin_lock(self, cpu: "Cpu", name: str) -> int: ...
    def spin_unlock(self, cpu: "Cpu", name: str, held_since: int) -> None: ...
    def __getattr__(self, name: str) -> Any: ...
