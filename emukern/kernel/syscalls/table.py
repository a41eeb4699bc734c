"""The syscall table: numbers to the ``sys_*`` functions of this package, and the dispatch."""
from __future__ import annotations

import functools
import hashlib
import importlib
import json
import os
import pkgutil
import sys
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
    trap_cycles, syscall_counts) fold these in when they are read.

    A row whose module is not imported yet gets a stand-in that imports it on the row's
    first call and puts the real handler in its place (see :func:`_handler_index`): a short
    run (``emukern run hello.S``) then imports the two or three syscall modules it uses
    instead of all sixty, a tenth of a second of its start-up."""
    index = _handler_index()
    handlers: dict[str, Callable[..., Any]] = {}
    if index is None:
        handlers = syscall_handlers()
        index = {}
    for mod in k.arch.SYSCALL_MODULES:          # the arch's own rows (imported already)
        handlers.update(_sys_functions(mod))
    table = {}
    for nr, name in SYSCALL_NAMES.items():
        attr = "sys_" + name
        fn = handlers.get(attr)
        if fn is not None:
            # the handler with its kernel bound (a C-level partial: no Python frame added)
            table[nr] = [name, functools.partial(fn, k), 0, 0, 0]
        elif attr in index:
            mod = sys.modules.get(index[attr])
            if mod is not None:
                table[nr] = [name, functools.partial(getattr(mod, attr), k), 0, 0, 0]
            else:
                row: list[Any] = [name, None, 0, 0, 0]
                row[1] = _first_call(k, row, index[attr], attr)
                table[nr] = row
    return table


def _first_call(k: "Kernel", row: list[Any], module: str, attr: str) -> Callable[..., Any]:
    """The stand-in of a row whose module is not imported yet: import it, put the bound
    handler in the row (every later call goes straight to it), and make this call through it."""
    def first_call(*args: Any) -> Any:
        fn = functools.partial(getattr(importlib.import_module(module), attr), k)
        row[1] = fn
        return fn(*args)
    return first_call


def _handler_index() -> dict[str, str] | None:
    """``sys_<name>`` -> the module of this package that defines it, as :func:`syscall_handlers`
    finds them (by importing every module), kept in emukern's cache under a key made of the
    modules' names, sizes and modification times, so that a changed or added module makes a
    new one.  None when it cannot be had: the table is then built from the imported modules."""
    try:
        stats = []
        for info in sorted(pkgutil.iter_modules(syscalls_pkg.__path__), key=lambda i: i.name):
            st = os.stat(os.path.join(syscalls_pkg.__path__[0], info.name + ".py"))
            stats.append(f"{info.name}:{st.st_size}:{st.st_mtime_ns}")
    except OSError:             # (a module that is not a plain .py file: no index)
        return None
    key = hashlib.sha256(("\n".join(stats) + sys.version).encode()).hexdigest()[:16]
    base = os.environ.get("EMUKERN_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "emukern")
    path = os.path.join(base, "syscall-index", key + ".json")
    try:
        with open(path) as f:
            got = json.load(f)
        if isinstance(got, dict):
            return got
    except (OSError, ValueError):
        pass
    index = {attr: fn.__module__ for attr, fn in syscall_handlers().items()}
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(index, f)
        os.replace(tmp, path)
    except OSError:
        pass                    # (a read-only cache: the index is used, not kept)
    return index


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
