"""The four modelled Linux changes as named switches, declared together in one place.

Each change exists both before and after; a run picks one value per switch
(``--policy NAME=VALUE``, the API's ``policies={...}``, the debugger's ``policy NAME VALUE``).
The mirrored kernel functions read ``kernel.policy(NAME)`` at the exact decision point the patch
changes — grep for the switch name to find it — so a switch made at run time (the debugger) takes
effect at the next decision.  ``riscv-vstate-sysctl`` also adds or removes the
``abi.riscv_v_vstate_discard`` sysctl when it is switched (see ``riscv/vector.py``).

Users add their own values (variants) and override named kernel functions with
:mod:`emukern.kernel.plugins`; a variant names the built-in value (``base``) that every decision
point it does not override follows, so :meth:`Policies.effective` is what kernel code reads and
:meth:`Policies.__getitem__` is what reports show.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from emukern.errors import ConfigError


from emukern.kernel import plugins
from emukern.kernel.switches import PATCHES, SWITCHES, Patch, Switch

__all__ = ["PATCHES", "SWITCHES", "Patch", "Switch", "Policies", "switch_values", "parse_assignments"]


def switch_values(name: str) -> tuple[str, ...]:
    """Built-in values of a switch, then the values plug-ins registered for it."""
    return SWITCHES[name].values + tuple(v.value for v in plugins.variants() if v.switch == name)


class Policies:
    """One machine's switch values.  Plug-in variants and overrides are snapshotted when the
    machine is made (a plug-in registered later does not change a running machine)."""

    def __init__(self, overrides: dict[str, str] | None = None) -> None:
        self.values = {n: s.default for n, s in SWITCHES.items()}
        self.variants = {(v.switch, v.value): v for v in plugins.variants()}
        self.function_overrides = {o.name: o for o in plugins.overrides()}
        self.booted = False                       # set by the kernel after boot: later sets are run time
        self.listeners: dict[str, list[Callable[[str], None]]] = {}
        self.overrides: dict[str, Callable[..., Any]] = {}    # kernel function name -> callable
        for k, v in (overrides or {}).items():
            self.set(k, v)
        self._resolve()

    def set(self, name: str, value: str) -> None:
        sw = SWITCHES.get(name)
        if sw is None:
            raise ConfigError(f"unknown policy {name!r}", hint="known policies: " + ", ".join(SWITCHES))
        variant = self.variants.get((name, value))
        if value not in sw.values and variant is None:
            known = sw.values + tuple(v for (n, v) in self.variants if n == name)
            raise ConfigError(f"policy {name} has no value {value!r}",
                              hint=f"{name} takes one of: {', '.join(known)} "
                                   "(plug-ins add values: --plugin FILE.py)")
        if self.booted:
            old = self.variants.get((name, self.values[name]))
            for v in (old, variant):
                if v is not None and not v.runtime:
                    raise ConfigError(f"policy {name}={v.value} (plug-in from {v.origin}) is boot-time only",
                                      hint=f"restart with --policy {name}={value}")
        changed = self.values[name] != value
        self.values[name] = value
        self._resolve()
        if changed:
            for fn in self.listeners.get(name, ()):
                fn(value)

    def on_change(self, name: str, fn: Callable[[str], None]) -> None:
        """Call ``fn(new_value)`` whenever ``name`` changes after construction (run-time switches)."""
        self.listeners.setdefault(name, []).append(fn)

    def _resolve(self) -> None:
        out: dict[str, Callable[..., Any]] = {o.name: o.fn for o in self.function_overrides.values()}
        for name, value in self.values.items():
            v = self.variants.get((name, value))
            if v is not None:
                out.update(v.overrides)
        self.overrides = out
        # what effective() returns, per switch, kept with the values (every set() resolves):
        # for decision points on every syscall, where the method call is most of the read
        self.effective_values = {name: self.effective(name) for name in self.values}

    def __getitem__(self, name: str) -> str:
        return self.values[name]

    def effective(self, name: str) -> str:
        """The built-in value the kernel's decision points follow (a variant's ``base``)."""
        value = self.values[name]
        v = self.variants.get((name, value))
        return v.base if v is not None else value

    def for_arch(self, arch: str) -> dict[str, str]:
        return {n: v for n, v in self.values.items() if SWITCHES[n].arch == arch}

    def plugins_in_use(self, arch: str | None = None) -> list[dict[str, Any]]:
        """The plug-in variants selected and the function overrides active, for reports and JSON."""
        out: list[dict[str, Any]] = []
        for name, value in self.values.items():
            v = self.variants.get((name, value))
            if v is not None and (arch is None or SWITCHES[name].arch == arch):
                out.append({"kind": "variant", "policy": name, "value": value, "base": v.base,
                            "overrides": sorted(v.overrides), "what": v.what, "origin": v.origin})
        for o in self.function_overrides.values():
            out.append({"kind": "override", "function": o.name, "what": o.what, "origin": o.origin})
        return out


def parse_assignments(items: list[str], what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"--{what} expects NAME=VALUE, got {item!r}",
                              hint=f"e.g. --{what} " + ("riscv-discard=eager" if what == "policy"
                                                         else "abi.riscv_v_vstate_discard=1"))
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out
