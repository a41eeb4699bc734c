"""`emukern serve` and EMUKERN_WARM: a run served by the warm worker is the ordinary run — the
same stdout, stderr, exit status and --json file, byte for byte — and the client runs the program
itself whenever no worker answers or the worker refuses (another load-time environment)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RV, A64 = "guest_asm/riscv", "guest_asm/arm64"

# each case: the emukern words ({json} becomes a per-mode path), the guest's stdin, and whether
# stderr goes to stdout (2>&1: the interleaving of the two streams must match too)
CASES = {
    "hello-summary": (["run", f"{RV}/hello.S"], b"", False),
    "arm64-json": (["run", f"{A64}/hello.S", "--cpus", "2", "--json", "{json}"], b"", False),
    "trace-merged": (["run", f"{RV}/vec_loop.S", "--trace", "traps"], b"", True),
    "policy": (["run", "-q", f"{RV}/lat_ctx_vec.S", "100", "--policy", "riscv-discard=eager"], b"", False),
    "stdin-pipe": (["run", f"{RV}/cksum.S"], b"some input\nline 2\n", False),
    "usage-error": (["run", "--bogus", f"{RV}/hello.S"], b"", False),
    "help": (["run", "--help"], b"", False),
    "missing": (["run", "/nonexistent/prog.S"], b"", False),
    "max-insns": (["run", f"{RV}/spin.S", "--max-insns", "5000"], b"", True),
}


def _env(*drop: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "EMUKERN_WARM" and k not in drop}
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


def _run(words: list[str], stdin: bytes, merged: bool, env: dict[str, str], tmp: Path, mode: str,
         interp: tuple[str, ...] = ()):
    js = tmp / f"{mode}.json"
    argv = [sys.executable, *interp, "-m", "emukern.cli"] + [w.replace("{json}", str(js)) for w in words]
    p = subprocess.run(argv, input=stdin, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT if merged else subprocess.PIPE, env=env, cwd=ROOT, timeout=300)
    return p.returncode, p.stdout, p.stderr, js.read_bytes() if js.exists() else None


def _start(sock: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-m", "emukern.cli", "serve", "--socket", str(sock), *extra],
                            env=env or _env(), cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    assert proc.stderr is not None
    line = proc.stderr.readline().decode()
    assert "listening" in line, line
    return proc


def _stop(proc: subprocess.Popen[bytes]) -> str:
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    return err.decode()


def test_served_runs_are_the_ordinary_runs(tmp_path: Path) -> None:
    sock = tmp_path / "warm.sock"
    proc = _start(sock)
    try:
        for name, (words, stdin, merged) in CASES.items():
            cold = _run(words, stdin, merged, _env(), tmp_path, "cold")
            warm = _run(words, stdin, merged, _env(EMUKERN_WARM=str(sock)), tmp_path, "warm")
            assert warm == cold, name
            assert cold[1] or cold[2], name              # (each case does print something)
    finally:
        log = _stop(proc)
    assert f"{len(CASES)} runs served, 0 refused" in log, log


def test_without_a_worker_or_when_refused_the_client_runs_it(tmp_path: Path) -> None:
    words, stdin, merged = CASES["hello-summary"]
    cold = _run(words, stdin, merged, _env(), tmp_path, "cold")
    # nobody listens there
    assert _run(words, stdin, merged, _env(EMUKERN_WARM=str(tmp_path / "none.sock")), tmp_path, "w") == cold
    sock = tmp_path / "warm.sock"
    proc = _start(sock, "--no-preload")
    try:
        # a variable read while modules load differs from the worker's: it refuses
        refused = _run(words, stdin, merged, _env(EMUKERN_WARM=str(sock), EMUKERN_ENGINES_PER_MM="1"),
                       tmp_path, "r")
        # an interpreter started with other options (the child would inherit the worker's)
        optimized = _run(words, stdin, merged, _env(EMUKERN_WARM=str(sock)), tmp_path, "o", ("-X", "dev"))
        # a worker that loads nothing in advance still gives the ordinary run
        served = _run(words, stdin, merged, _env(EMUKERN_WARM=str(sock)), tmp_path, "s")
    finally:
        log = _stop(proc)
    assert refused == cold and served == cold and optimized[:3] == cold[:3]
    assert "refused a run: another load-time environment" in log, log
    assert "refused a run: other interpreter options" in log and "1 runs served, 2 refused" in log, log


@pytest.mark.parametrize("arch", ["riscv", "arm64"])
def test_a_served_run_reports_the_guests_exit_status(tmp_path: Path, arch: str) -> None:
    """A guest that exits non-zero: the client's status is the guest's, as in an ordinary run."""
    src = tmp_path / "exit3.S"
    body = ("li a0, 3\n li a7, 94\n ecall\n" if arch == "riscv" else "mov x0, #3\n mov x8, #94\n svc #0\n")
    src.write_text(".globl _start\n_start:\n " + body)
    sock = tmp_path / "warm.sock"
    proc = _start(sock, "--no-preload")
    try:
        cold = _run(["run", "-q", "--arch", "riscv64" if arch == "riscv" else "arm64", str(src)], b"", False, _env(), tmp_path, "cold")
        warm = _run(["run", "-q", "--arch", "riscv64" if arch == "riscv" else "arm64", str(src)], b"", False, _env(EMUKERN_WARM=str(sock)), tmp_path, "warm")
    finally:
        _stop(proc)
    assert cold[0] == 3 and warm == cold


@pytest.mark.parametrize("unbuffered", ["1", None])
def test_buffering_of_the_streams_is_the_ordinary_runs(tmp_path: Path, unbuffered: str | None) -> None:
    """With and without PYTHONUNBUFFERED (the child rebuilds Python's streams as a fresh
    interpreter would): stdout and stderr into one pipe interleave the same way."""
    base = _env("PYTHONUNBUFFERED", **({"PYTHONUNBUFFERED": unbuffered} if unbuffered else {}))
    sock = tmp_path / "warm.sock"
    proc = _start(sock, "--no-preload", env=base)
    try:
        for name in ("trace-merged", "hello-summary", "usage-error"):
            words, stdin, _merged = CASES[name]
            cold = _run(words, stdin, True, base, tmp_path, "cold")
            warm = _run(words, stdin, True, dict(base, EMUKERN_WARM=str(sock)), tmp_path, "warm")
            assert warm == cold, name
    finally:
        log = _stop(proc)
    assert "3 runs served, 0 refused" in log, log
