"""Context switches and fork (issue 30, levers 0 and 1): host CPU time per iteration of a pipe
round trip between two processes, the same between two threads, and fork+exit+wait, under
emukern and qemu-user; and the floor under the round trips (emukern.bench.raw_switch).

One guest, guest_asm/c/pipe_pingpong.c (static, built with the Debian cross compiler: no
figure without it), run at two counts; the difference of the CPU times over the difference of
the counts is one iteration with start-up removed.  emukern runs in this process
(``time.process_time``), qemu-user as a child (its rusage).  The rounds alternate (stats.alternate).

The floor figure runs another guest, guest_asm/<arch>/lat_ctx.S (two processes, one byte over two
pipes, assembled by emukern: no cross compiler needed), under emukern, qemu-user and raw Unicorn
with a ctypes hook that does only pipe2, fork, one-byte read/write with a blocking read, wait4 and
exit (one engine per process, and one engine with a register-file swap): what any emulator whose
traps land in Python pays per round trip, measured in the same rounds as emukern's figure.
"""
from __future__ import annotations

import functools
import hashlib
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Callable

from emukern.bench.peers import child_cpu
from emukern.bench.stats import Target, Unavailable, alternate, figure, unavailable
from emukern.resources import guest_asm_dir

CC = {"riscv64": "riscv64-linux-gnu-gcc", "arm64": "aarch64-linux-gnu-gcc"}
SOURCE = "pipe_pingpong.c"
# issue 30's targets: a process switch <= 50 us and a thread switch <= 20 us of CPU (a round trip
# is two switches), a process round trip <= 10x qemu-user, fork+exit+wait <= 5 ms
TARGET_RT_QEMU = 10.0
TARGET_THREAD_RT_US = 40.0
TARGET_FORK_US = 5000.0
LAT_CTX = "lat_ctx.S"
RAW_PROC = "raw Unicorn floor"                                         # an engine per process
RAW_THREAD = "raw Unicorn floor (one engine, register-file swap)"      # the thread-switch floor


def guest(arch: str) -> Path:
    """The static guest for ``arch``, built once into emukern's cache (keyed by its source)."""
    from emukern.debian import cache_root
    cc = shutil.which(CC[arch])
    if cc is None:
        raise Unavailable(f"{CC[arch]} not installed (the guest is C)")
    src = guest_asm_dir() / "c" / SOURCE
    digest = hashlib.sha256(src.read_bytes() + cc.encode()).hexdigest()[:16]
    out = cache_root() / "test-guests" / f"pipe_pingpong-{arch}-{digest}"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".tmp")
        res = subprocess.run([cc, "-O2", "-static", "-o", str(tmp), str(src), "-lpthread"],
                             capture_output=True, text=True)
        if res.returncode != 0:
            raise Unavailable(f"{CC[arch]} failed: {res.stderr.strip()[:300]}")
        tmp.replace(out)
    return out


def _emukern_cpu(arch: str, argv: list[str]) -> float:
    return _emukern_elf_cpu(arch, guest(arch), argv, SOURCE)


def _qemu_cpu(cmd: list[str], arch: str, argv: list[str]) -> float:
    return _qemu_elf_cpu(cmd, guest(arch), argv)


def per_iteration(run: Callable[[list[str]], float], mode: str | None, n1: int, n2: int) -> float:
    """µs of CPU per iteration: the run at n2 minus the run at n1, over n2 - n1 (the count is
    the guest's argument after ``mode``, or its only one)."""
    lead = [mode] if mode is not None else []
    return (run([*lead, str(n2)]) - run([*lead, str(n1)])) / (n2 - n1) * 1e6


# qemu-user runs the switch loops this many times more often than emukern: its round trip is
# the host kernel's (about 3 us), so at emukern's counts the difference of two runs is a few ms,
# within the noise of qemu's own start-up (measured: 100 vs 500 round trips gave 2.6-19.9 us for
# one loop, 2,000 vs 10,000 gave 2.9-3.2 us)
QEMU_SCALE_RT, QEMU_SCALE_FORK = 20, 4


def m_switch(cfg: Any, qemu: dict[str, list[str]], arches: tuple[str, ...]) -> list[dict[str, Any]]:
    """The three figures on each architecture (``cfg``: selfbench.Settings)."""
    n_rt, n_fork = (40, 10) if cfg.quick else (500, 50)
    rows = [("p", "pipe round trip between processes", "switch_proc", n_rt, QEMU_SCALE_RT,
             lambda: Target("<=", TARGET_RT_QEMU, "ratio", "qemu-user")),
            ("t", "pipe round trip between threads", "switch_thread", n_rt, QEMU_SCALE_RT,
             lambda: Target("<=", TARGET_THREAD_RT_US, "value")),
            ("f", "fork+exit+wait", "fork", n_fork, QEMU_SCALE_FORK, lambda: Target("<=", TARGET_FORK_US, "value"))]
    out = []
    for mode, what, key, n, scale, target in rows:
        for arch in arches:
            cfg.say(f"{arch} {what}")
            n1, n2 = max(1, n // 5), n
            ek = functools.partial(_emukern_cpu, arch)
            qe = functools.partial(_qemu_cpu, qemu[arch], arch)
            runners: dict[str, Callable[[], float]] = {
                "emukern": functools.partial(per_iteration, ek, mode, n1, n2),
                "qemu-user": functools.partial(per_iteration, qe, mode, n1 * scale, n2 * scale)}
            try:
                guest(arch)
            except Unavailable as exc:
                runners = {"emukern": unavailable(str(exc))}
            samples, notes = alternate(runners, cfg.reps)
            out.append(figure(f"{arch} {what} (CPU per iteration)", "µs", "emukern", samples, notes, target(),
                              key=f"{arch}.{key}", arch=arch, iterations=[n1, n2],
                              qemu_iterations=[n1 * scale, n2 * scale]))
    out.extend(m_switch_floor(cfg, qemu, arches, n_rt))
    return out


def m_switch_floor(cfg: Any, qemu: dict[str, list[str]], arches: tuple[str, ...], n: int) -> list[dict[str, Any]]:
    """lat_ctx.S's round trip between processes under emukern, the raw Unicorn floors and
    qemu-user, alternated; no target of its own (the issue's are on the figures above)."""
    from emukern.bench.raw_switch import raw_switch_us
    out = []
    for arch in arches:
        what = f"{LAT_CTX} pipe round trip between processes"
        cfg.say(f"{arch} {what}")
        n1, n2 = max(1, n // 5), n
        try:
            elf = _lat_ctx_elf(arch)
        except Unavailable as exc:
            runners: dict[str, Callable[[], float]] = {"emukern": unavailable(str(exc))}
        else:
            ek = functools.partial(_emukern_elf_cpu, arch, elf)
            qe = functools.partial(_qemu_elf_cpu, qemu[arch], elf)
            runners = {"emukern": functools.partial(per_iteration, ek, None, n1, n2),
                       RAW_PROC: functools.partial(raw_switch_us, arch, "processes", n1, n2, elf),
                       RAW_THREAD: functools.partial(raw_switch_us, arch, "threads", n1, n2, elf),
                       "qemu-user": functools.partial(per_iteration, qe, None, n1 * QEMU_SCALE_RT, n2 * QEMU_SCALE_RT)}
        samples, notes = alternate(runners, cfg.reps)
        out.append(figure(f"{arch} {what} (CPU per iteration)", "µs", "emukern", samples, notes, None,
                          key=f"{arch}.switch_floor", arch=arch, iterations=[n1, n2], guest=LAT_CTX,
                          qemu_iterations=[n1 * QEMU_SCALE_RT, n2 * QEMU_SCALE_RT]))
    return out


def _lat_ctx_elf(arch: str) -> Path:
    from emukern.bench.raw_switch import lat_ctx_elf
    from emukern.errors import AssemblerError
    try:
        return lat_ctx_elf(arch)
    except (AssemblerError, OSError) as exc:
        raise Unavailable(f"{LAT_CTX} for {arch} does not assemble here: {exc}") from exc


def _emukern_elf_cpu(arch: str, elf: Path, argv: list[str], name: str | None = None) -> float:
    """CPU time of Machine.run() of ``elf`` (``name``: what an error calls it)."""
    from emukern.api import Machine
    m = Machine(arch=arch, max_insns=None)
    m.load(elf, argv)
    t = time.process_time()
    r = m.run()
    dt = time.process_time() - t
    if r.exit_status != 0:
        raise RuntimeError(f"{arch} {name or elf.name} {' '.join(argv)} exited with {r.exit_status} under emukern")
    return dt


def _qemu_elf_cpu(cmd: list[str], elf: Path, argv: list[str]) -> float:
    if shutil.which(cmd[0]) is None:
        raise Unavailable(f"{cmd[0]} not installed")
    cpu, rc, _err = child_cpu([*cmd, str(elf), *argv], timeout=600)
    if rc != 0:
        raise Unavailable(f"{cmd[0]} exited with {rc}")
    return cpu
