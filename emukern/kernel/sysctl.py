"""/proc/sys: a table of sysctl entries that architecture code registers into.

A guest opens ``/proc/sys/abi/riscv_v_vstate_discard`` with openat and reads/writes it like Linux's
``proc_dobool``/``proc_dointvec_minmax`` handlers: reads print the value and a newline, writes are
parsed and validated (not a number -> -EINVAL; a bool stores any non-zero number as 1),
unknown names -> -ENOENT.  The CLI's
``--sysctl key=value`` and the API write through the same validation.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from emukern.errors import ConfigError


@dataclass
class SysctlEntry:
    path: str                 # dotted name, e.g. "abi.riscv_v_vstate_discard"
    value: int
    mode: int = 0o644
    minimum: int = 0
    maximum: int = 1
    kind: str = "bool"        # "bool" (proc_dobool) or "int" (proc_dointvec_minmax)
    on_change: Callable[[int], None] | None = None

    def render(self) -> bytes:
        return f"{self.value}\n".encode()

    def parse(self, data: bytes) -> int | None:
        """The value a write of ``data`` stores, or None for -EINVAL."""
        text = data.decode("ascii", "replace").strip(" \t\n")
        if not text:
            return None
        if self.kind == "bool":
            # proc_dobool (kernel/sysctl.c) parses one int with proc_dointvec (base 0, optional
            # '-', only whitespace after it, must fit an int) and stores it into a C bool: any
            # non-zero value becomes 1 (writing "2" reads back "1"); non-numbers are -EINVAL.
            m = re.fullmatch(r"(-?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)(?:[ \t\n].*)?", text, re.S)
            if m is None:
                return None
            digits = m.group(2)
            mag = int(digits, 8) if digits.startswith("0") and digits[1:2] not in ("x", "X") else int(digits, 0)
            if mag > (2**31 if m.group(1) else 2**31 - 1):
                return None
            return int(mag != 0)
        try:
            v = int(text, 10)
        except ValueError:
            return None
        return v if self.minimum <= v <= self.maximum else None

    def set(self, v: int) -> None:
        self.value = v
        if self.on_change:
            self.on_change(v)


class SysctlTable:
    def __init__(self) -> None:
        self.entries: dict[str, SysctlEntry] = {}

    def register(self, entry: SysctlEntry) -> SysctlEntry:
        self.entries[entry.path] = entry
        return entry

    @staticmethod
    def path_to_key(path: str) -> str | None:
        prefix = "/proc/sys/"
        if not path.startswith(prefix):
            return None
        return path[len(prefix):].strip("/").replace("/", ".")

    def lookup_path(self, path: str) -> SysctlEntry | None:
        key = self.path_to_key(path)
        return None if key is None else self.entries.get(key)

    def get(self, key: str) -> int:
        e = self.entries.get(key)
        if e is None:
            raise ConfigError(f"unknown sysctl {key!r}", hint=self._hint())
        return e.value

    def write(self, key: str, value: str) -> None:
        e = self.entries.get(key)
        if e is None:
            raise ConfigError(f"unknown sysctl {key!r}", hint=self._hint())
        v = e.parse(value.encode())
        if v is None:
            raise ConfigError(f"invalid value {value!r} for sysctl {key} (EINVAL)",
                              hint="this entry takes 0 or 1" if e.kind == "bool"
                              else f"range {e.minimum}..{e.maximum}")
        e.set(v)

    def _hint(self) -> str:
        if not self.entries:
            return "this machine registers no sysctls (abi.riscv_v_vstate_discard needs RISC-V with V)"
        return "known sysctls: " + ", ".join(sorted(self.entries))
