"""What the native-versus-Python tests compare of a run: its trap log, record by record, and how
many syscalls reached the kernel's entry."""
from __future__ import annotations

from typing import Any, Iterable


def trap_rows(trap_log: Iterable[Any], fields: tuple[str, ...], text: bool = False) -> list[tuple]:
    """Each record as a tuple: its header (sequence, CPU, tid, time, syndrome, TIF flags; its
    printed form too when ``text``) and the named fields of its Trap (None where it has none)."""
    return [(rec.seq, rec.cpu, rec.tid, rec.time, rec.syndrome, rec.tif) + ((str(rec),) if text else ())
            + tuple(getattr(rec.trap, f, None) for f in fields) for rec in trap_log]


def count_syscalls(cpus: Iterable[Any]) -> list[int]:
    """Wrap each CPU's ``on_syscall`` so that every syscall entry adds one to the list's count."""
    seen = [0]
    for cpu in cpus:
        orig = cpu.on_syscall

        def count(*a: Any, orig: Any = orig) -> Any:
            seen[0] += 1
            return orig(*a)
        cpu.on_syscall = count
    return seen
