"""Start-up: the wall time of a whole `emukern run -q hello.S`, per architecture, from a fresh
interpreter to its exit, with every cache warm (the assembled ELF, the tool versions, Python's
bytecode).  For a short guest this is nearly all of what a user waits for, and it is dominated
by imports, not by emulation.

The floor beside it is the same interpreter doing nothing (``python -c pass``): what no change
to emukern can remove.  The third contender is the same command with ``EMUKERN_WARM`` set, served
by an ``emukern serve`` worker this measurement starts (its own figure, against the same
target); its CPU time counts the client and the worker's forked child.  The rounds alternate
(stats.alternate).
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from emukern.bench.peers import child_cpu
from emukern.bench.stats import Target, Unavailable, alternate, figure
from emukern.resources import guest_asm_dir

# the start-up issue's target: a warm `emukern run guest_asm/riscv/hello.S` in 0.3 s of wall time
TARGET_STARTUP_S = 0.3
EK, FLOOR = "emukern run -q hello.S", "python -c pass"
WARM = "EMUKERN_WARM=1 emukern run -q hello.S"
GUEST_DIR = {"riscv64": "riscv", "arm64": "arm64"}


def child_env() -> dict[str, str]:
    """The environment of the timed runs: this process's, with the emukern package it imported
    first on the path, and bytecode writing allowed, so the warm-up run leaves the .pyc files a
    warm start reads (an installed emukern has them from pip)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def hello_argv(arch: str) -> list[str]:
    return [sys.executable, "-m", "emukern.cli", "run", "-q", str(guest_asm_dir() / GUEST_DIR[arch] / "hello.S")]


def wall(argv: list[str], env: dict[str, str], runs: int, cpu: list[float] | None = None) -> float:
    """Mean wall seconds of ``runs`` runs of ``argv`` (each must exit 0); the mean CPU seconds
    (user + system, the run's own children included: what wait4 gives for it alone,
    peers.child_cpu) go to ``cpu``: on a loaded machine the wall time is mostly waiting for a
    core, and the CPU time still compares two builds."""
    total = used = 0.0
    for _ in range(runs):
        t = time.perf_counter()
        # (run from emukern's own root: `python -m` puts the working directory first on the
        # path, and another checkout there would be the one measured)
        c, rc, err = child_cpu(argv, timeout=120, env=env, cwd=env["PYTHONPATH"].split(os.pathsep)[0],
                               pin=False)
        total += time.perf_counter() - t
        used += c
        if rc != 0:
            raise Unavailable(f"{' '.join(argv[2:])} exited with {rc}: "
                              f"{err.decode(errors='replace').strip()[:200]}")
    if cpu is not None:
        cpu.append(used / runs)
    return total / runs


def _cpu_of_children_of(pid: int) -> float:
    """CPU seconds of the reaped children of process ``pid`` (the worker's forked runs)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


class WarmWorker:
    """An ``emukern serve`` for the warm contender, on a private socket; stopped by close()."""

    def __init__(self, env: dict[str, str]) -> None:
        self.dir = tempfile.mkdtemp(prefix="emukern-bench-warm-")
        self.socket = os.path.join(self.dir, "warm.sock")
        self.proc: subprocess.Popen[bytes] | None = subprocess.Popen(
            [sys.executable, "-m", "emukern.cli", "serve", "--socket", self.socket], env=env,
            cwd=env["PYTHONPATH"].split(os.pathsep)[0], stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline().decode(errors="replace")     # "listening on ..." once ready
        if "listening" not in line:
            self.close()
            raise Unavailable(f"emukern serve did not start: {line.strip()[:200]}")
        self.env = dict(env, EMUKERN_WARM=self.socket)

    def run(self, argv: list[str], runs: int, cpu: list[float]) -> float:
        assert self.proc is not None
        before, own = _cpu_of_children_of(self.proc.pid), []
        t = wall(argv, self.env, runs, own)
        time.sleep(0.02)                          # (the worker reaps its children on its next turn)
        cpu.append(own[0] + (_cpu_of_children_of(self.proc.pid) - before) / runs)
        if self.proc.stderr is not None and self.proc.poll() is not None:
            raise Unavailable("emukern serve ended")
        return t

    def close(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        for name in os.listdir(self.dir):
            os.unlink(os.path.join(self.dir, name))
        os.rmdir(self.dir)


def m_startup(cfg: Any, arches: tuple[str, ...]) -> list[dict[str, Any]]:
    """Two figures per architecture (``cfg``: selfbench.Settings): an ordinary run, and the same
    run through a warm worker."""
    env = child_env()
    runs = 1 if cfg.quick else 3
    out = []
    for arch in arches:
        cfg.say(f"{arch} start-up")
        argv = hello_argv(arch)
        try:
            wall(argv, env, 1)         # warm: assemble (once), tool versions, bytecode
        except Unavailable:
            pass                       # the timed rounds report it
        cpu: dict[str, list[float]] = {EK: [], FLOOR: [], WARM: []}
        worker: WarmWorker | None = None
        warm_note = None
        try:
            worker = WarmWorker(env)
        except (Unavailable, OSError) as exc:
            warm_note = str(exc)
        runners: dict[str, Callable[[], float]] = {
            EK: lambda a=argv: wall(a, env, runs, cpu[EK]),
            FLOOR: lambda: wall([sys.executable, "-c", "pass"], env, runs, cpu[FLOOR])}
        if worker is not None:
            runners[WARM] = lambda a=argv, w=worker: w.run(a, runs, cpu[WARM])
        try:
            samples, notes = alternate(runners, cfg.reps)
        finally:
            if worker is not None:
                worker.close()
        if warm_note is not None:
            samples[WARM], notes[WARM] = [], warm_note
        cpu_median = {who: statistics.median(xs) for who, xs in cpu.items() if xs}
        cfg.say(f"{arch} start-up CPU medians: " + ", ".join(f"{w} {v:.3f} s" for w, v in cpu_median.items()))
        cold = {k: v for k, v in samples.items() if k != WARM}
        out.append(figure(f"{arch} start-up: emukern run -q hello.S (wall, warm caches)", "s", EK, cold,
                          {k: v for k, v in notes.items() if k != WARM}, Target("<=", TARGET_STARTUP_S, "value"),
                          key=f"{arch}.startup", arch=arch, runs_per_sample=runs,
                          cpu_median_s={k: v for k, v in cpu_median.items() if k != WARM}))
        out.append(figure(f"{arch} start-up through a warm worker: EMUKERN_WARM=1 emukern run -q hello.S (wall)",
                          "s", WARM, {WARM: samples[WARM], FLOOR: samples[FLOOR]},
                          {k: v for k, v in notes.items() if k in (WARM, FLOOR)},
                          Target("<=", TARGET_STARTUP_S, "value"), key=f"{arch}.startup_warm", arch=arch,
                          runs_per_sample=runs,
                          cpu_median_s={k: v for k, v in cpu_median.items() if k in (WARM, FLOOR)}))
    return out
