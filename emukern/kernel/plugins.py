"""User plug-ins: your own variant of a modelled Linux change, without editing emukern.

Two kinds of extension, registered from the Python API, from pytest, or from a file passed with
``emukern run --plugin my_policy.py`` (the file is imported once; it calls the functions below):

* :func:`register_variant` adds a new value to one of the four switches (``emukern info
  policies`` lists them).  A variant names a built-in ``base`` value that every decision point it
  does not replace follows, and maps names of kernel functions (:data:`KERNEL_FUNCTIONS`) to your
  callables.  Select it like a built-in value: ``--policy arm64-sve=my-value``.
* :func:`override` replaces one named kernel function for every machine made while it is
  registered, whatever the switches say.

A replacement is called with the same arguments as the kernel function it replaces (``k`` the
Kernel first, then the CPU, the task ...) and returns what it returns; :func:`builtin` gives the
original so a replacement can delegate.  Machines snapshot the registry when they are created, so
registering or removing a plug-in never changes a running machine.  Selected variants and active
overrides appear in the run summary, in ``--json`` (``plugins``) and in ``emukern reproduce``.

From pytest (the registration is undone when the block ends)::

    from emukern.kernel import plugins

    def restore(k, cpu, task):
        ...                                   # your riscv_v_vstate_restore
        return plugins.builtin("riscv_v_vstate_restore")(k, cpu, task)

    def test_my_restore(run_guest, guest_asm):
        with plugins.registered(plugins.override("riscv_v_vstate_restore", restore)):
            r, m = run_guest(guest_asm / "riscv" / "lat_ctx_vec.S", argv=["10"])

Worked example: :mod:`emukern.kernel.plugin_examples.sve_drop_after_n` (tests:
tests/kernel/test_plugins.py).
"""
from __future__ import annotations

import functools
import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

from emukern.errors import ConfigError
from emukern.kernel.switches import SWITCHES

# name -> (module that defines it, what it decides).  Only these can be replaced: each is decorated
# with @kernel_function at its definition and every caller calls it through its module's global
# name, so once a plug-in is registered a replacement is looked up at every call.
KERNEL_FUNCTIONS: dict[str, tuple[str, str]] = {
    "fpsimd_syscall_enter": ("emukern.kernel.arch.arm64.fpsimd",
                             "arm64 syscall entry with TIF_SVE: flush, or drop TIF_SVE (arm64-sve)"),
    "task_fpsimd_load": ("emukern.kernel.arch.arm64.fpsimd",
                         "arm64 reload of a task's FP/SVE state from memory (arm64-sve)"),
    "do_sve_acc": ("emukern.kernel.arch.arm64.fpsimd", "arm64 SVE access trap (arm64-sve)"),
    "do_el0_undef": ("emukern.kernel.arch.arm64.traps", "arm64 UNDEFINED instruction at EL0 (arm64-mrs)"),
    "riscv_v_vstate_discard": ("emukern.kernel.arch.riscv.vector",
                               "riscv syscall entry: discard vector state (riscv-discard)"),
    "riscv_v_vstate_restore": ("emukern.kernel.arch.riscv.vector",
                               "riscv return to user: restore or discard (riscv-discard)"),
    "riscv_v_vstate_save": ("emukern.kernel.arch.riscv.vector", "riscv context switch: save a Dirty context"),
}

_BUILTINS: dict[str, Callable[..., Any]] = {}
_ARMED = False        # a plug-in was registered in this process: kernel functions dispatch
F = TypeVar("F", bound=Callable[..., Any])


def kernel_function(fn: F) -> F:
    """Make a kernel function replaceable by plug-ins.  The first argument must be the Kernel.

    Until a plug-in is registered in this process the function is left as it is (no cost on the
    hot path); the first registration replaces each module's function with a dispatcher that
    runs the calling kernel's replacement (``k.policies.overrides``) or the built-in."""
    name = fn.__name__
    if name not in KERNEL_FUNCTIONS:
        raise RuntimeError(f"{name} is not listed in plugins.KERNEL_FUNCTIONS")
    _BUILTINS[name] = fn
    fn.builtin = fn  # type: ignore[attr-defined]
    return _dispatcher(fn) if _ARMED else fn  # type: ignore[return-value]


def _dispatcher(fn: Callable[..., Any]) -> Callable[..., Any]:
    name = fn.__name__

    @functools.wraps(fn)
    def call(k: Any, *args: Any) -> Any:
        impl = k.policies.overrides.get(name)
        if impl is None:
            return fn(k, *args)
        return impl(k, *args)
    call.builtin = fn  # type: ignore[attr-defined]
    return call


def _arm() -> None:
    """Install the dispatchers (once per process, at the first plug-in registration)."""
    global _ARMED
    if _ARMED:
        return
    _ARMED = True
    for name, (modname, _what) in KERNEL_FUNCTIONS.items():
        mod = importlib.import_module(modname)
        setattr(mod, name, _dispatcher(_BUILTINS[name]))


def builtin(name: str) -> Callable[..., Any]:
    """The built-in implementation of kernel function ``name`` (for a replacement to delegate to)."""
    _check_name(name)
    if name not in _BUILTINS:
        importlib.import_module(KERNEL_FUNCTIONS[name][0])
    return _BUILTINS[name]


@dataclass(frozen=True)
class Variant:
    switch: str
    value: str
    base: str
    what: str
    overrides: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    origin: str = "api"
    runtime: bool = True      # False: the debugger's `policy` refuses to switch to or from it


@dataclass(frozen=True)
class Override:
    name: str
    fn: Callable[..., Any]
    what: str
    origin: str = "api"


_VARIANTS: dict[tuple[str, str], Variant] = {}
_OVERRIDES: dict[str, Override] = {}
_LOADED: dict[str, str] = {}         # plug-in file/module -> origin label


def _check_name(name: str) -> None:
    if name not in KERNEL_FUNCTIONS:
        raise ConfigError(f"{name!r} is not a kernel function plug-ins can replace",
                          hint="replaceable: " + ", ".join(KERNEL_FUNCTIONS))


def _check_callable(name: str, fn: Any) -> None:
    if not callable(fn):
        raise ConfigError(f"the replacement for {name} is not callable ({type(fn).__name__})",
                          hint="pass a function taking the same arguments as the kernel function")


def _caller_origin(depth: int = 2) -> str:
    f = sys._getframe(depth)
    return f.f_globals.get("__emukern_plugin__") or f.f_globals.get("__name__", "api")


def register_variant(switch: str, value: str, *, base: str, what: str,
                     overrides: Mapping[str, Callable[..., Any]] | None = None,
                     runtime: bool = True, origin: str | None = None) -> Variant:
    """Add ``value`` to ``switch``: decision points follow built-in ``base`` except the kernel
    functions in ``overrides`` (name -> replacement).  Re-registering the same value replaces it."""
    sw = SWITCHES.get(switch)
    if sw is None:
        raise ConfigError(f"unknown policy {switch!r}", hint="known policies: " + ", ".join(SWITCHES))
    if value in sw.values:
        raise ConfigError(f"{switch}={value} is a built-in value", hint="give your variant its own name")
    if not value or any(c.isspace() or c in "=," for c in value):
        raise ConfigError(f"bad variant name {value!r}", hint="use letters, digits, '-', '+', '_'")
    if base not in sw.values:
        raise ConfigError(f"variant {switch}={value}: base {base!r} is not a built-in value",
                          hint=f"{switch} base is one of: {', '.join(sw.values)}")
    ov = dict(overrides or {})
    for name, fn in ov.items():
        _check_name(name)
        _check_callable(name, fn)
    v = Variant(switch, value, base, what, MappingProxyType(ov), origin or _caller_origin(), runtime)
    _arm()
    _VARIANTS[(switch, value)] = v
    return v


def override(name: str, fn: Callable[..., Any], *, what: str = "", origin: str | None = None) -> Override:
    """Replace kernel function ``name`` with ``fn`` in every machine made from now on."""
    _check_name(name)
    _check_callable(name, fn)
    o = Override(name, fn, what or (fn.__doc__ or "").strip().split("\n")[0], origin or _caller_origin())
    _arm()
    _OVERRIDES[name] = o
    return o


def unregister(item: Variant | Override) -> None:
    if isinstance(item, Variant):
        _VARIANTS.pop((item.switch, item.value), None)
    else:
        _OVERRIDES.pop(item.name, None)


def variants() -> list[Variant]:
    return list(_VARIANTS.values())


def overrides() -> list[Override]:
    return list(_OVERRIDES.values())


@contextmanager
def registered(*items: Variant | Override) -> Iterator[None]:
    """For tests: ``with registered(register_variant(...)):`` removes the plug-ins afterwards."""
    try:
        yield
    finally:
        for it in items:
            unregister(it)


def load_plugin(spec: str) -> str:
    """Import a plug-in: a ``.py`` file path or a dotted module name.  Each is imported once per
    process (the file's registrations then stay).  Returns its origin label."""
    if spec in _LOADED:
        return _LOADED[spec]
    path = Path(spec)
    if spec.endswith(".py") or path.exists():
        if not path.is_file():
            raise ConfigError(f"--plugin {spec}: no such file", hint="give the path of a Python file")
        label = path.name
        modname = f"emukern_plugin_{abs(hash(str(path.resolve())))}"
        mspec = importlib.util.spec_from_file_location(modname, path)
        assert mspec is not None and mspec.loader is not None
        mod = importlib.util.module_from_spec(mspec)
        mod.__dict__["__emukern_plugin__"] = label
        _LOADED[spec] = label
        try:
            mspec.loader.exec_module(mod)
        except ConfigError:
            _LOADED.pop(spec, None)
            raise
        except Exception as exc:  # noqa: BLE001 - the user's file: say which and why, no traceback
            _LOADED.pop(spec, None)
            raise ConfigError(f"--plugin {spec}: importing it failed: {type(exc).__name__}: {exc}",
                              hint="run `python " + spec + "` to see the full traceback") from exc
        return label
    try:
        importlib.import_module(spec)
    except ModuleNotFoundError as exc:
        raise ConfigError(f"--plugin {spec}: no such file or module",
                          hint="give a .py file path or an importable module name") from exc
    _LOADED[spec] = spec
    return spec
