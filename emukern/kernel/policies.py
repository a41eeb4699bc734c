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


@dataclass(frozen=True)
class Patch:
    """A Linux patch as its mail names it (from the raw mails in the project's seeds folder)."""
    subject: str
    author: str
    date: str
    message_id: str
    figure: str               # the published figure the benchmark compares with, and its source

    @property
    def short(self) -> str:
        """How user-facing text names the change: subject (author, date)."""
        return f"{self.subject} ({self.author}, {self.date})"

    @property
    def cite(self) -> str:
        return f"{self.short}, {self.message_id}"


PATCHES: dict[str, Patch] = {
    "riscv-vstate-sysctl": Patch(
        "riscv: Add sysctl to control discard of vstate during syscall", "Drew Fustini", "2025-07-18",
        "<20250719033912.1313955-1-fustini@kernel.org>",
        "null_syscall (vsetvli + getppid loop) on SiFive X280 (Tenstorrent Blackhole P100): 198.73 ns "
        "with discard=1, 149.89 ns with discard=0 (the patch mail)"),
    "riscv-discard": Patch(
        "riscv: vector: treat VS_INITIAL as discard", "Andy Chiu", "2026-04-01",
        "<20260402043414.2421916-2-andybnac@gmail.com>",
        "lmbench lat_ctx 2 on an FPGA with VLEN=512: 599.84 before, 559.17 after, 6.78 % better "
        "(the v2 patch mail)"),
    "arm64-mrs": Patch(
        "arm64: rework EL0 MRS emulation", "Mark Rutland; v5.10 backport by Jinjie Ruan", "2023-10-11",
        "<20231011072701.876772-11-ruanjinjie@huawei.com>",
        "64-vCPU VM, N threads x 1,000,000 reads of ID_AA64ISAR0_EL1: real 0.29 -> 65.40 s (1 -> 64 "
        "threads) before, 0.24 -> 0.33 s after; system 3609.09 / 11.27 s at 64 (the backport mail)"),
    "arm64-sve": Patch(
        "arm64/sve: Performance improvements with SVE state saving", "Mark Brown", "v11, 2026",
        "v11 cover letter and 2 patches; our copy has no Message-ID (v10 was 2026-07-03; change-id "
        "20230807-arm64-sve-trap-mitigation-2e7e2663c849)",
        "fp-pidbench, 128-bit SVE: ~6 % syscall overhead after SVE use; patch 2 ~4.5 % better than "
        "baseline after SVE use, ~0.4 % overhead with SVE between syscalls (the v11 cover letter)"),
}


@dataclass(frozen=True)
class Switch:
    name: str
    values: tuple[str, ...]
    default: str
    patch: Patch
    what: str
    arch: str
    decided: str              # where the kernel reads it (and so when a run-time switch bites)


SWITCHES: dict[str, Switch] = {s.name: s for s in [
    Switch("riscv-vstate-sysctl", ("absent", "present"), "present", PATCHES["riscv-vstate-sysctl"],
           "absent: syscall entry always discards vector state (before the patch); present: "
           "abi.riscv_v_vstate_discard decides", "riscv64",
           "__riscv_v_vstate_discard, at every discard; switching adds/removes the sysctl"),
    Switch("riscv-discard", ("eager", "deferred"), "deferred", PATCHES["riscv-discard"],
           "eager: clobber registers at syscall entry and mark Dirty; deferred: mark VS=Initial and "
           "clobber on return to user, never saving the dead context", "riscv64",
           "riscv_v_vstate_discard / _restore / _set_restore, at every call"),
    Switch("arm64-mrs", ("hook-list", "direct"), "direct", PATCHES["arm64-mrs"],
           "hook-list: do_el0_undef walks undef_hooks under undef_lock; direct: try_emulate_mrs "
           "first, lock-free", "arm64", "do_el0_undef, at every UNDEFINED trap"),
    Switch("arm64-sve", ("legacy", "p1", "p1+p2"), "p1+p2", PATCHES["arm64-sve"],
           "legacy: TIF_SVE dropped only on an FPSIMD-only load; p1: sve_timeout kept on that load; "
           "p1+p2: also drop TIF_SVE at syscall entry once the timeout passed", "arm64",
           "do_sve_acc, task_fpsimd_load, fpsimd_syscall_enter, at every call"),
]}


def switch_values(name: str) -> tuple[str, ...]:
    """Built-in values of a switch, then the values plug-ins registered for it."""
    from emukern.kernel import plugins
    return SWITCHES[name].values + tuple(v.value for v in plugins.variants() if v.switch == name)


class Policies:
    """One machine's switch values.  Plug-in variants and overrides are snapshotted when the
    machine is made (a plug-in registered later does not change a running machine)."""

    def __init__(self, overrides: dict[str, str] | None = None) -> None:
        from emukern.kernel import plugins
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
