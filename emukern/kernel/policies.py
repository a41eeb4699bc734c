"""The seed changes as named switches, declared together in one place.

Each seed patch exists both before and after; a run picks one value per switch
(``--policy NAME=VALUE``, the API's ``policies={...}``, the debugger's ``policy NAME VALUE``).
The mirrored kernel functions read ``kernel.policy(NAME)`` at the exact decision point the patch
changes — grep for the switch name to find it.
"""
from __future__ import annotations

from dataclasses import dataclass

from emukern.errors import ConfigError


@dataclass(frozen=True)
class Switch:
    name: str
    values: tuple[str, ...]
    default: str
    seed: str
    what: str
    arch: str


SWITCHES: dict[str, Switch] = {s.name: s for s in [
    Switch("riscv-vstate-sysctl", ("absent", "present"), "present", "000",
           "absent: syscall entry always discards vector state (before the patch); present: "
           "abi.riscv_v_vstate_discard decides", "riscv64"),
    Switch("riscv-discard", ("eager", "deferred"), "deferred", "003",
           "eager: clobber registers at syscall entry and mark Dirty; deferred: mark VS=Initial and "
           "clobber on return to user, never saving the dead context", "riscv64"),
    Switch("arm64-mrs", ("hook-list", "direct"), "direct", "001",
           "hook-list: do_el0_undef walks undef_hooks under undef_lock; direct: try_emulate_mrs "
           "first, lock-free", "arm64"),
    Switch("arm64-sve", ("legacy", "p1", "p1+p2"), "p1+p2", "004",
           "legacy: TIF_SVE dropped only on an FPSIMD-only load; p1: sve_timeout kept on that load; "
           "p1+p2: also drop TIF_SVE at syscall entry once the timeout passed", "arm64"),
]}


class Policies:
    def __init__(self, overrides: dict[str, str] | None = None) -> None:
        self.values = {n: s.default for n, s in SWITCHES.items()}
        for k, v in (overrides or {}).items():
            self.set(k, v)

    def set(self, name: str, value: str) -> None:
        sw = SWITCHES.get(name)
        if sw is None:
            raise ConfigError(f"unknown policy {name!r}", hint="known policies: " + ", ".join(SWITCHES))
        if value not in sw.values:
            raise ConfigError(f"policy {name} has no value {value!r}",
                              hint=f"{name} takes one of: {', '.join(sw.values)}")
        self.values[name] = value

    def __getitem__(self, name: str) -> str:
        return self.values[name]

    def for_arch(self, arch: str) -> dict[str, str]:
        return {n: v for n, v in self.values.items() if SWITCHES[n].arch == arch}


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
