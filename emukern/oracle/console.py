"""Reading the serial console of a booted real kernel: the protocol runner.c speaks.

The console carries three kinds of text: the firmware's banner (OpenSBI on riscv), the kernel's own
messages (printk; the runner lowers the console log level to panics only, but boot messages and a
panic still appear) and the runner's lines.  Only a line of the form

    @@EMUKERN <body> <crc>

whose <crc> is the CRC-32 (8 lower-case hex digits) of <body> is the runner's.  A program's bytes
appear only hex-encoded inside ``OUT`` bodies, so nothing the kernel prints, and nothing binary
the program writes, can be taken for the other.  Every other line is the kernel's (or firmware's)
and is kept apart in ``kernel_lines``.  ``Attempted to kill init! exitcode=0x...`` there means the
runner itself died.
"""
from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field

MARK = "@@EMUKERN "
_LINE = re.compile(r"@@EMUKERN (.+) ([0-9a-f]{8})\r?$")
_KILL_INIT = re.compile(r"Attempted to kill init! exitcode=(0x[0-9a-fA-F]+)")


@dataclass
class ProgramRun:
    index: int
    stdout: bytes = b""
    stderr: bytes = b""
    exit_status: int | None = None          # None: the program never finished (boot ended first)
    timed_out: bool = False
    errors: list[str] = field(default_factory=list)
    signal: int = 0                         # the signal that ended it (KILLED), or 0
    stopped: int = 0                        # the stop signal the runner sent it ("opts": stop), or 0


@dataclass
class ConsoleLog:
    release: str | None = None               # uname -r of the booted kernel (BOOT line)
    machine: str | None = None
    runs: dict[int, ProgramRun] = field(default_factory=dict)
    done: bool = False
    kernel_lines: list[str] = field(default_factory=list)
    bad_lines: list[str] = field(default_factory=list)   # looked like ours, failed the CRC
    init_exitcode: int | None = None         # from a panic on the runner's death
    setup_errors: list[str] = field(default_factory=list)

    def run(self, n: int) -> ProgramRun:
        return self.runs.setdefault(n, ProgramRun(n))

    def tail(self, n: int = 25) -> str:
        return "\n".join(self.kernel_lines[-n:])


def parse_console(raw: bytes) -> ConsoleLog:
    log = ConsoleLog()
    text = raw.decode("utf-8", errors="replace").replace("\r\n", "\n")
    for line in text.split("\n"):
        at = line.find(MARK)
        if at < 0:
            if line.strip():
                log.kernel_lines.append(line)
                m = _KILL_INIT.search(line)
                if m:
                    log.init_exitcode = int(m.group(1), 16)
            continue
        prefix, ours = line[:at], line[at:]
        if prefix.strip():
            log.kernel_lines.append(prefix)
        m = _LINE.match(ours)
        if m is None or f"{zlib.crc32(m.group(1).encode()):08x}" != m.group(2):
            log.bad_lines.append(ours)
            continue
        _apply(log, m.group(1).split(" "))
    return log


def _apply(log: ConsoleLog, f: list[str]) -> None:
    kind, payload = f[0], f[-1]
    try:
        if kind == "BOOT":
            log.release, log.machine = f[1], f[2]
        elif kind == "BEGIN":
            log.run(int(f[1]))
        elif kind == "OUT":
            r = log.run(int(f[1]))
            data = bytes.fromhex(payload)
            if f[2] == "1":
                r.stdout += data
            else:
                r.stderr += data
        elif kind == "EXIT":
            log.run(int(f[1])).exit_status = int(f[2])
        elif kind == "KILLED":
            log.run(int(f[1])).signal = int(f[2])
        elif kind == "STOP":
            log.run(int(f[1])).stopped = int(f[2])
        elif kind == "TIMEOUT":
            log.run(int(f[1])).timed_out = True
        elif kind == "ERROR":
            log.run(int(f[1])).errors.append(" ".join(f[2:-1]))
        elif kind == "SETUP-FAILED":
            log.setup_errors.append(" ".join(f[1:-1]))
        elif kind == "DONE":
            log.done = True
    except (IndexError, ValueError):
        log.bad_lines.append(MARK + " ".join(f))
