"""The initramfs a real kernel boots: emukern's runner as /init and the programs to run.

The runner (runner.c, beside this file) is compiled once per architecture with Debian's GCC cross
compiler as a static binary and cached by the hash of its source.  Each program goes to
/emukern/<n>/<file name> with its argv and time limit beside it (the layout runner.c reads).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from emukern.debian import cache_root
from emukern.oracle import OracleError
from emukern.oracle.cpio import Cpio

RUNNER_SRC = Path(__file__).with_name("runner.c")
CROSS_GCC = {"arm64": "aarch64-linux-gnu-gcc", "riscv64": "riscv64-linux-gnu-gcc"}
CROSS_PKG = {"arm64": "gcc-aarch64-linux-gnu libc6-dev-arm64-cross",
             "riscv64": "gcc-riscv64-linux-gnu libc6-dev-riscv64-cross"}


@dataclass
class Program:
    """One program of a boot: a static ELF for the kernel's architecture, its arguments, a limit."""
    elf: Path
    args: list[str] = field(default_factory=list)
    timeout: int = 60                      # seconds of real time inside the booted machine
    label: str = ""                        # what the user called it (for messages)
    # how a kselftest runner would run it (runner.c's /emukern/<n>/opts; all off by default):
    exe: str = ""                          # run this path of the initramfs (e.g. "./sve-test" in
                                           # cwd) instead of a copy of elf under /emukern/<n>/
    cwd: str = ""                          # chdir here first
    own_pid_ns: bool = True                # False: an ordinary process, not the init of a pid ns
    stack_unlimited: bool = False          # ulimit -s unlimited
    stop: tuple[int, int] | None = None    # (signal, seconds): send signal after seconds

    def argv0(self, n: int) -> str:
        return self.exe or f"/emukern/{n}/{self.elf.name}"

    def opts(self) -> str:
        lines = []
        if self.cwd:
            lines.append(f"cwd {self.cwd}")
        if not self.own_pid_ns:
            lines.append("nopidns")
        if self.stack_unlimited:
            lines.append("stack unlimited")
        if self.stop:
            lines.append(f"stop {int(self.stop[0])} {int(self.stop[1])}")
        return "".join(ln + "\n" for ln in lines)


def build_runner(arch: str) -> Path:
    """The static runner binary for ``arch`` (compiled on first use, then cached)."""
    src = RUNNER_SRC.read_bytes()
    gcc = shutil.which(CROSS_GCC[arch])
    if gcc is None:
        raise OracleError(f"{CROSS_GCC[arch]} not found: it builds the /init that runs your program "
                          "under the real kernel",
                          hint=f"apt-get install {CROSS_PKG[arch]} (tools/setup.sh installs it)")
    digest = hashlib.sha256(src + arch.encode()).hexdigest()[:20]
    out = cache_root() / "oracle" / f"runner-{arch}-{digest}"
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    # a private temporary name: parallel pytest workers may build the same runner at once
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    p = subprocess.run([gcc, "-static", "-O2", "-Wall", "-o", str(tmp), str(RUNNER_SRC)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise OracleError(f"building the runner with {CROSS_GCC[arch]} failed:\n{p.stderr.strip()[-2000:]}",
                          hint=f"is the cross C library installed? apt-get install {CROSS_PKG[arch]}")
    tmp.replace(out)
    return out


def build_initramfs(arch: str, programs: list[Program], setup: dict[str, str] | None = None,
                    root: Path | None = None, files: dict[str, Path] | None = None) -> bytes:
    """The cpio image: ``root``'s tree (if any), /init = the runner, /emukern/<n>/ per program;
    ``files``: more executables, path in the image -> host file (directories come with them)."""
    c = Cpio()
    if root is not None:
        c.tree(root)
    for dest, host in sorted((files or {}).items()):
        try:
            c.file(dest, host.read_bytes(), 0o755)
        except OSError as exc:
            raise OracleError(f"cannot read {host}: {exc.strerror}") from None
    c.file("init", build_runner(arch).read_bytes(), 0o755)
    c.dir("dev")
    c.chardev("dev/console", 5, 1)      # the kernel opens it for init before any devtmpfs exists
    c.dir("proc", 0o555)
    c.dir("tmp", 0o1777)
    if setup:
        c.file("emukern/setup", "".join(f"{k} {v}\n" for k, v in setup.items()).encode())
    for n, prog in enumerate(programs):
        if not prog.exe:
            try:
                data = prog.elf.read_bytes()
            except OSError as exc:
                raise OracleError(f"cannot read {prog.elf}: {exc.strerror}") from None
            c.file(f"emukern/{n}/{prog.elf.name}", data, 0o755)
        argv = [prog.argv0(n), *prog.args]
        c.file(f"emukern/{n}/argv", b"".join(a.encode() + b"\0" for a in argv))
        c.file(f"emukern/{n}/timeout", f"{int(prog.timeout)}\n".encode())
        if prog.opts():
            c.file(f"emukern/{n}/opts", prog.opts().encode())
    return c.to_bytes()
