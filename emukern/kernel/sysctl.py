"""/proc/sys: a table of sysctl entries that architecture code registers into.

A guest opens ``/proc/sys/abi/riscv_v_vstate_discard`` with openat and reads/writes it like Linux's
``proc_dobool``/``proc_dointvec_minmax`` handlers: reads print the value and a newline, writes are
parsed and validated (not a number -> -EINVAL; a bool stores any non-zero number as 1),
unknown names -> -ENOENT.  The CLI's
``--sysctl key=value`` and the API write through the same validation.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from emukern.errors import ConfigError
from emukern.kernel import errno as E


TMPBUFLEN = 22                  # proc_get_long's buffer: at most 21 characters of one number
INT_MAX = 2**31 - 1
_WSPACE = b" \t\n"               # proc_wspace_sep: what may follow a number


def _strtoul(text: bytes) -> tuple[int, int] | None:
    """strtoul_lenient(base 0): (value, characters used), or None on overflow past 64 bits."""
    base, j = 10, 0
    if text[:1] == b"0":
        if text[1:2] in (b"x", b"X") and len(text) > 2 and chr(text[2]) in "0123456789abcdefABCDEF":
            base, j = 16, 2
        else:
            base = 8
    v = 0
    while j < len(text):
        c = chr(text[j]).lower()
        d = "0123456789abcdef".find(c) if c else -1
        if d < 0 or d >= base:
            break
        v = v * base + d
        if v >= 1 << 64:
            return None                 # -ERANGE
        j += 1
    return v, j


def proc_get_int(data: bytes) -> tuple[int, int] | None:
    """One int as proc_dointvec parses a write (kernel/sysctl.c): (value, bytes consumed) or
    None for -EINVAL.  Leading spaces are skipped; the number is at most 21 characters (a longer
    one is refused outright: the kernel cannot see where it ends); '0_1', '+1', '1a' and values
    outside an int are -EINVAL; trailing spaces are consumed, anything after them is left."""
    data = data[:4096 - 1]              # the kernel copies at most a page less one byte
    n = len(data)
    p = 0
    while p < n and data[p:p + 1] in (b" ", b"\t", b"\n", b"\v", b"\f", b"\r"):
        p += 1                          # proc_skip_spaces (isspace)
    if p == n:
        return None                     # nothing but spaces: "first" still set -> -EINVAL
    tmp = data[p:p + TMPBUFLEN - 1]
    neg = tmp[:1] == b"-" and n - p > 1
    q = 1 if neg else 0
    if not tmp[q:q + 1].isdigit():
        return None
    got = _strtoul(tmp[q:])
    if got is None:
        return None
    val, used = got
    length = q + used
    if length == TMPBUFLEN - 1:
        return None                     # too long: might be "1234...a" or two numbers run together
    end = p + length
    if end < n and data[end:end + 1] not in (b" ", b"\t", b"\n"):
        return None                     # the next character must be a separator
    if val > (INT_MAX + 1 if neg else INT_MAX):
        return None                     # do_proc_dointvec_conv: must fit an int
    while end < n and data[end:end + 1] in (b" ", b"\t", b"\n", b"\v", b"\f", b"\r"):
        end += 1                        # the trailing proc_skip_spaces
    return (-val if neg else val), end


def default_llseek(pos: int, size: int, offset: int, whence: int) -> int:
    """fs/read_write.c default_llseek, which /proc/sys files use: the new position, or -errno.
    A negative result is -EINVAL (never ESPIPE: the file is seekable); SEEK_DATA/SEEK_HOLE at or
    past the end are -ENXIO; an unknown whence is -EINVAL."""
    if whence == 1:                     # SEEK_CUR
        offset += pos
    elif whence == 2:                   # SEEK_END
        offset += size
    elif whence in (3, 4):              # SEEK_DATA, SEEK_HOLE
        if offset >= size:
            return -E.ENXIO
        if whence == 4:
            offset = size
    elif whence != 0:
        return -E.EINVAL
    if offset < 0 or offset > (1 << 63) - 1:
        return -E.EINVAL
    return offset


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
        r = self.parse_write(data)
        return None if r is None else r[0]

    def parse_write(self, data: bytes) -> tuple[int, int] | None:
        """(value, bytes consumed) of a write, or None for -EINVAL: __do_proc_dointvec for one int.

        Both kinds parse like Linux's proc_get_long (base 0: 0x.. hex, 0.. octal, an optional
        '-', then only a space, tab or newline); a bool (proc_dobool) then stores any non-zero
        value as 1, an int (proc_dointvec_minmax) must lie in [minimum, maximum]."""
        got = proc_get_int(data)
        if got is None:
            return None
        v, used = got
        if self.kind == "bool":
            return int(v != 0), used
        return (v, used) if self.minimum <= v <= self.maximum else None

    def set(self, v: int) -> None:
        self.value = v
        if self.on_change:
            self.on_change(v)


def proc_sys_write(f: Any, data: bytes, pos: int | None = None) -> int:
    """A guest write(2) to an open /proc/sys file: bytes consumed, or -errno.  ``pos`` is
    pwrite64's offset (proc_sys_call_handler works at ``iocb->ki_pos``, which pwrite sets to its
    offset and write to the file position; a pwrite leaves the file position alone).

    Linux's default kernel.sysctl_writes_strict=1 (proc_first_pos_non_zero_ignore): a write at a
    non-zero file position changes nothing and returns 0 — so after one successful write, which
    moves the position past what it consumed, a second write on the same descriptor is ignored
    (seek back to 0 to write again)."""
    if not data:
        return 0                        # proc_sys_call_handler: an empty write changes nothing
    if (f.pos if pos is None else pos) != 0:
        return 0
    got = f.entry.parse_write(data)
    if got is None:
        return -E.EINVAL
    value, used = got
    f.entry.set(value)
    if pos is None:
        f.pos += used
    return used


class SysctlTable:
    def __init__(self) -> None:
        self.entries: dict[str, SysctlEntry] = {}
        # entries this machine's kernel would have but a policy removed (a kernel before the
        # patch that adds them), with the policy that did: a --sysctl naming one says so
        self.removed_by: dict[str, str] = {}

    def register(self, entry: SysctlEntry) -> SysctlEntry:
        self.entries[entry.path] = entry
        self.removed_by.pop(entry.path, None)
        return entry

    def unregister(self, path: str, removed_by: str) -> None:
        """Take ``path`` away because of ``removed_by`` (e.g. "riscv-vstate-sysctl=absent")."""
        self.entries.pop(path, None)
        self.removed_by[path] = removed_by

    def _unknown(self, key: str) -> ConfigError:
        why = self.removed_by.get(key)
        if why is not None:
            name = why.split("=", 1)[0]
            return ConfigError(f"sysctl {key} does not exist with {why}: that value models the kernel "
                               "before the patch that adds it",
                               hint=f"drop --sysctl {key}=..., or use --policy {name}=present")
        return ConfigError(f"unknown sysctl {key!r}", hint=self._hint())

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
            raise self._unknown(key)
        return e.value

    def write(self, key: str, value: str) -> None:
        e = self.entries.get(key)
        if e is None:
            raise self._unknown(key)
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
