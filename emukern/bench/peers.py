"""Peer emulators for ``emukern bench``: qemu-user and (optional) Qiling on the same guest ELFs.

qemu-user runs a static ELF as a whole process (its start-up included) and does its syscalls on
the host kernel.  Qiling is a Python emulator on Unicorn like emukern; it is optional: it is
found either in this interpreter (``import qiling``) or in the Python named by
``$EMUKERN_QILING_PYTHON`` (Qiling pins its own Unicorn version, so it usually lives in a venv of
its own: ``python3 -m venv /opt/qiling && /opt/qiling/bin/pip install qiling``).  Qiling runs in a
child process that times only ``ql.run()`` (its loader and rootfs set-up excluded).  A peer that is
absent or fails raises :class:`~emukern.bench.stats.Unavailable`: no figure, a note.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from emukern.bench.stats import Unavailable

QEMU_BIN = {"riscv64": "qemu-riscv64", "arm64": "qemu-aarch64"}
TIMEOUT_S = 300


def one_cpu() -> None:
    """Keep the calling process (and what it forks) on one host CPU: emukern runs every guest
    task in one host thread, so a peer's processes that ping-pong through a pipe are compared
    on one CPU too.  Spread over two, qemu-user's round trip measured 8-43 us of CPU instead of
    2.5-3.2 us (the cross-CPU wake-ups; run to run it depends on where the host puts them)."""
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def child_cpu(cmd: list[str], timeout: float, env: dict[str, str] | None = None,
              cwd: str | None = None, pin: bool = True) -> tuple[float, int, bytes]:
    """Run ``cmd`` to its end: (its CPU seconds, user + system, with the children it waited
    for; its exit code; the end of its stderr); ``pin``: on one host CPU (:func:`one_cpu`).
    The CPU time is the one ``wait4`` returns for this child alone: the difference of two
    getrusage(RUSAGE_CHILDREN) readings around the run also takes in any other child reaped
    meanwhile (subprocess reaps earlier ones when it starts a new one)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env, cwd=cwd,
                             preexec_fn=one_cpu if pin else None)
        timer = threading.Timer(timeout, p.kill)
        timer.start()
        try:
            _pid, status, ru = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
        p.returncode = os.waitstatus_to_exitcode(status)     # (reaped here: Popen must not wait)
        err.seek(0)
        tail = err.read()[-400:]
    return ru.ru_utime + ru.ru_stime, p.returncode, tail


def qemu_cmd(arch: str, vlen: int = 256) -> list[str]:
    if arch == "riscv64":
        return [QEMU_BIN[arch], "-cpu", f"rv64,v=true,vlen={vlen},elen=64,vext_spec=v1.0"]
    return [QEMU_BIN[arch], "-cpu", "max"]


def run_wall(cmd: list[str], what: str) -> float:
    """Whole-process wall seconds of ``cmd``; Unavailable when it is not installed, times out or
    exits non-zero."""
    if shutil.which(cmd[0]) is None:
        raise Unavailable(f"{cmd[0]} not installed")
    t = time.perf_counter()
    try:
        p = subprocess.run(cmd, check=False, capture_output=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise Unavailable(f"{what}: timed out after {TIMEOUT_S} s") from None
    dt = time.perf_counter() - t
    if p.returncode != 0:
        err = p.stderr.decode("utf-8", "replace").strip().splitlines()
        raise Unavailable(f"{what} failed with status {p.returncode}" + (f": {err[-1]}" if err else ""))
    return dt


def qemu_wall(arch: str, elf: Path, args: list[str], cmd: list[str] | None = None) -> float:
    cmd = cmd or qemu_cmd(arch)
    return run_wall(cmd + [str(elf), *args], f"{cmd[0]} {elf.stem}")


# The child Qiling runs: argv = arch elf args...; prints the seconds ql.run() took.
_QILING_CHILD = r"""
import sys, tempfile, time
from qiling import Qiling
from qiling.const import QL_VERBOSE, QL_ARCH, QL_OS
arch = {"riscv64": QL_ARCH.RISCV64, "arm64": QL_ARCH.ARM64}[sys.argv[1]]
with tempfile.TemporaryDirectory() as root:
    ql = Qiling(sys.argv[2:], rootfs=root, archtype=arch, ostype=QL_OS.LINUX, verbose=QL_VERBOSE.DISABLED,
                console=False)
    t = time.perf_counter()
    ql.run()
    print(f"QILING_RUN_SECONDS {time.perf_counter() - t!r}")
"""


def qiling_python() -> str | None:
    """The Python interpreter that has Qiling, or None."""
    env = os.environ.get("EMUKERN_QILING_PYTHON")
    if env:
        return env if shutil.which(env) or Path(env).is_file() else None
    return sys.executable if importlib.util.find_spec("qiling") is not None else None


def qiling_run_seconds(arch: str, elf: Path, args: list[str]) -> float:
    """Seconds of ``ql.run()`` for the ELF under Qiling (a child process)."""
    py = qiling_python()
    if py is None:
        raise Unavailable("Qiling not installed (pip install qiling, or set EMUKERN_QILING_PYTHON "
                          "to a Python that has it)")
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "qiling_child.py"
        script.write_text(_QILING_CHILD)
        try:
            p = subprocess.run([py, str(script), arch, str(elf), *args], capture_output=True,
                               timeout=TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            raise Unavailable(f"Qiling {elf.stem}: timed out after {TIMEOUT_S} s") from None
    out = p.stdout.decode("utf-8", "replace")
    for line in out.splitlines():
        if line.startswith("QILING_RUN_SECONDS "):
            return float(line.split()[1])
    err = p.stderr.decode("utf-8", "replace").strip().splitlines()
    raise Unavailable(f"Qiling {elf.stem} failed with status {p.returncode}" + (f": {err[-1]}" if err else ""))
