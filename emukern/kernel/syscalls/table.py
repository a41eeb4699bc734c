"""The syscall table: numbers to the ``sys_*`` functions of this package, and the dispatch."""
from __future__ import annotations

import functools
import importlib
import pkgutil
from typing import Callable

from emukern.kernel import syscalls as syscalls_pkg
from typing import TYPE_CHECKING
from emukern.errors import MemoryFault
from emukern.kernel import errno as E
from emukern.kernel.syscalls import SYSCALL_NAMES
from emukern.kernel.task import Task
from emukern.machine.memory import OutOfMemory
from typing import Any
if TYPE_CHECKING:
    from emukern.kernel.types import Kernel
    from emukern.machine.cpu_base import Cpu


def syscall_name(k: "Kernel", nr: int) -> str:
    """The name a number is logged by: its table row's, else asm-generic's, else syscall_NR."""
    entry = k._dispatch.get(nr)
    return entry[0] if entry is not None else SYSCALL_NAMES.get(nr, f"syscall_{nr}")


def build_syscall_table(k: "Kernel") -> dict[int, list[Any]]:
    """nr -> [name, bound handler, entries, completions, cycles], built once (the dispatch is
    on every syscall's path).  The last three are counts Kernel.syscall_entry keeps for the
    calls it takes: entered (a trap), returned on its short path (by name), and those
    returns' cycles.  A list item costs a fraction of a Counter's += (measured ~5 times
    less), so the short path counts here and the kernel's Counters (trap_counts,
    trap_cycles, syscall_counts) fold these in when they are read."""
    handlers = syscall_handlers()
    for mod in k.arch.SYSCALL_MODULES:          # the arch's own rows
        handlers.update(_sys_functions(mod))
    table = {}
    for nr, name in SYSCALL_NAMES.items():
        fn = handlers.get("sys_" + name)
        if fn is not None:
            # the handler with its kernel bound (a C-level partial: no Python frame added)
            table[nr] = [name, functools.partial(fn, k), 0, 0, 0]
    return table


def syscall_handlers() -> dict[str, Callable[..., Any]]:
    """Every ``sys_*`` function of the modules in this package, by name (the modules are
    grouped as the Linux files they mirror; see the package docstring)."""
    handlers: dict[str, Callable[..., Any]] = {}
    for info in pkgutil.iter_modules(syscalls_pkg.__path__):
        handlers.update(_sys_functions(importlib.import_module(f"{syscalls_pkg.__name__}.{info.name}")))
    return handlers


def _sys_functions(mod: Any) -> dict[str, Callable[..., Any]]:
    """The ``sys_*`` functions a module defines (aliases such as sys_getxattr included)."""
    return {attr: value for attr, value in vars(mod).items()
            if attr.startswith("sys_") and callable(value) and getattr(value, "__module__", None) == mod.__name__}


def _call_syscall(k: "Kernel", cpu: "Cpu", task: Task, nr: int, args: tuple[int, ...]) -> tuple[str, Any]:
    """(name, return value) through the dispatch table: an unknown number is -ENOSYS (and
    counted), a bad user pointer -EFAULT, an allocation the host refuses -ENOMEM."""
    entry = k._dispatch.get(nr)
    if entry is None:
        k.unknown_syscalls[nr] += 1
        return f"syscall_{nr}", -E.ENOSYS
    name, fn = entry[0], entry[1]
    a0, a1, a2, a3, a4, a5 = args
    try:
        # (six positional arguments: a call with *args costs twice as much here)
        return name, fn(cpu, task, a0, a1, a2, a3, a4, a5)
    except MemoryFault:
        return name, -E.EFAULT
    except OutOfMemory:
        return name, -E.ENOMEM
