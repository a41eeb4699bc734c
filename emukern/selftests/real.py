"""The same selftest binaries under a real Debian kernel: `emukern selftests --real KERNEL`.

One boot per (kernel, vector length) runs every built test of that kernel's architecture, each as
the kselftest runner would: from its own directory (``cd $dir; ./test``, so fp-stress finds its
children and vlset ``./rdvl-sve``), as an ordinary process (not the init of a pid namespace,
which would ignore signals it has no handler for), riscv ``mm/mmap_bottomup`` under ``ulimit -s
unlimited`` as run_mmap.sh does, with emukern's per-test time limit (``--time-limit``) and the
stress tests (sve-test, fpsimd-test, kernel-test) stopped after ``REAL_STRESS_SECONDS`` with the
signal their harness sends (SIGTERM, as fp-stress does).  The machine's CPU is emukern's for that
row: ``-cpu max,sve<VL>=on`` (every power of two up to VL) with the default VL written to
/proc/sys/abi/sve_default_vector_length, or ``rv64,v=true,vlen=<VLEN>``.

Each test's verdict comes from the rules emukern's own runs use (runner.exit_verdict,
runner.stress_verdict, the same TAP parser).  A result is cached per test under
~/.cache/emukern/selftests/real/, keyed by the kernel package and version, the digests of the test
binary and its helpers, the CPU configuration and the run settings, so a re-run boots only for what
changed.  ``--record`` writes the verdicts to ``real_kernel.json`` beside expected.toml: the data a
plain ``emukern selftests --kernel NAME`` checks emukern against (see ``RealTable``).
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from emukern.selftests import tap as taplib
from emukern.selftests.build import Built
from emukern.selftests.catalog import SelfTest
from emukern.selftests.runner import SIGNAMES, exit_verdict, stress_verdict

REAL_FILE = Path(__file__).with_name("real_kernel.json")
REAL_STRESS_SECONDS = 2        # wall seconds a stress test runs in the real machine before SIGTERM


@dataclass
class RealOutcome:
    test: str
    vl: int
    verdict: str                  # pass | fail | skip | timeout | not built
    counts: str = ""
    cause: str = ""
    exit_status: int | None = None
    output: str = ""              # stdout+stderr tail

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RealRun:
    """What one kernel gave at one vector length (from boots or the cache)."""
    kernel: str
    package: str
    version: str
    release: str                  # uname -r inside the machine
    cpu: str                      # the qemu -cpu option
    vl: int
    date: str                     # when the newest of these results was measured (UTC date)
    outcomes: dict[str, RealOutcome]
    boots: int = 0                # boots this call made (0: all from the cache)
    boot_seconds: float = 0.0


def vm_dir(t: SelfTest) -> str:
    return f"/selftests/{t.srcdir}"


def program_for(t: SelfTest, built: Built, time_limit: float) -> tuple[Any, dict[str, Path]]:
    """The runner's Program for ``t`` and the files (test and helpers) it needs in the initramfs."""
    from emukern.oracle.initramfs import Program
    assert built.path is not None
    d = vm_dir(t)
    files = {f"{d}/{built.path.name}": built.path}
    for h in t.helpers:
        hp = built.path.parent / h
        if hp.is_file():
            files[f"{d}/{h}"] = hp
    stop = (t.stop_signal, REAL_STRESS_SECONDS) if t.kind == "stress" and t.stop_signal else None
    prog = Program(built.path, list(t.args), timeout=max(1, int(time_limit)), label=t.id,
                   exe=f"./{built.path.name}", cwd=d, own_pid_ns=False,
                   stack_unlimited=t.stack_unlimited, stop=stop)
    return prog, files


def verdict_of(t: SelfTest, vl: int, run: Any) -> RealOutcome:
    """Judge one real run (a console.ProgramRun) by the rules emukern's runs are judged by."""
    out = run.stdout.decode("utf-8", "replace")
    err = run.stderr.decode("utf-8", "replace")
    o = RealOutcome(t.id, vl, "fail", exit_status=run.exit_status, output=(out + err)[-4000:])
    tp = taplib.parse(out)
    if tp.seen:
        o.counts = tp.counts()
    causes: list[str] = []
    code = run.exit_status if not run.signal else None
    if run.errors:
        causes.append("the runner could not start it: " + "; ".join(run.errors))
    elif run.exit_status is None:
        causes.append("the boot ended before it finished")
    elif run.timed_out:
        o.verdict = "timeout"
        causes.append("still running at the per-test time limit")
    elif t.kind == "stress":
        o.verdict = stress_verdict(t, bool(run.stopped), run.signal, code, out + err, causes, handled=False)
    elif run.signal:
        causes.append(f"fatal {SIGNAMES.get(run.signal, run.signal)}")
    else:
        o.verdict = exit_verdict(t, code, out, tp)
    if o.verdict not in ("pass", "skip"):
        detail = tp.first_failure or tp.bail_out or _last_line(out + err)
        o.cause = "; then ".join(causes) + (" — " if causes and detail else "") + (detail or "")
    return o


def _last_line(text: str) -> str:
    for line in reversed(text.strip().splitlines()):
        s = line.strip()
        if s and not s.startswith("# Totals") and not s.startswith("# Planned"):
            return s[:160]
    return ""


def cpu_of(arch: str, vl: int) -> str:
    from emukern.oracle.qemu import cpu_option
    return cpu_option(arch, vlen=vl, sve_vl=vl)


def _digest(t: SelfTest, files: dict[str, Path]) -> str:
    h = hashlib.sha256()
    for dest in sorted(files):
        h.update(dest.encode() + b"\0" + files[dest].read_bytes())
    return h.hexdigest()


def cache_key(img: Any, t: SelfTest, vl: int, prog: Any, files: dict[str, Path]) -> str:
    from emukern.oracle.initramfs import RUNNER_SRC
    h = hashlib.sha256(json.dumps([
        img.profile.name, img.package, img.version, cpu_of(img.profile.arch, vl), vl,
        t.id, list(t.args), prog.timeout, prog.stop, prog.stack_unlimited, prog.cwd, prog.exe,
        _digest(t, files), hashlib.sha256(RUNNER_SRC.read_bytes()).hexdigest()]).encode())
    return h.hexdigest()[:32]


def _cache_dir() -> Path:
    from emukern.debian import cache_root
    return cache_root() / "selftests" / "real"


def run_real(kernel: str, tests: list[tuple[SelfTest, Built]], vl: int, time_limit: float,
             progress: Callable[[str], None] | None = None, use_cache: bool = True) -> RealRun:
    """Every built test of ``tests`` under the real ``kernel`` at vector length ``vl``: from the
    cache, and one boot for all that are not there."""
    from emukern.oracle.kernels import fetch_kernel, profile
    from emukern.oracle.qemu import boot
    from emukern.oracle.session import RealKernel, Unavailable
    p = profile(kernel, None)
    why = RealKernel().unavailable(p)
    if why:
        raise Unavailable(why)
    img = fetch_kernel(p)
    cdir = _cache_dir() / p.name
    outcomes: dict[str, RealOutcome] = {}
    todo: list[tuple[SelfTest, Any, dict[str, Path], str]] = []
    release, dates = "", []
    for t, built in tests:
        if not built.ok:
            outcomes[t.id] = RealOutcome(t.id, vl, "not built", cause=built.reason)
            continue
        prog, files = program_for(t, built, time_limit)
        key = cache_key(img, t, vl, prog, files)
        hit = _load(cdir / f"{key}.json") if use_cache else None
        if hit is not None:
            outcomes[t.id] = verdict_of(t, vl, hit[0])
            release = release or hit[1]
            dates.append(hit[2])
        else:
            todo.append((t, prog, files, key))
    boots, secs = 0, 0.0
    if todo:
        if progress:
            progress(f"booting {p.name} ({img.package} {img.version}) -cpu {cpu_of(p.arch, vl)} for "
                     f"{len(todo)} tests: " + " ".join(t.id.split("/", 1)[1] for t, *_ in todo))
        files_all: dict[str, Path] = {}
        for _, _, f, _ in todo:
            files_all.update(f)
        res = boot(img, [x[1] for x in todo], vlen=vl, sve_vl=vl, files=files_all)
        boots, secs = 1, res.seconds
        release = res.log.release or "?"
        today = _dt.datetime.now(_dt.timezone.utc).date().isoformat()
        dates.append(today)
        cdir.mkdir(parents=True, exist_ok=True)
        from emukern.oracle.console import ProgramRun
        for i, (t, _, _, key) in enumerate(todo):
            run = res.log.runs.get(i, ProgramRun(i))
            outcomes[t.id] = verdict_of(t, vl, run)
            if run.exit_status is not None:          # an unfinished run is not an answer
                _save(cdir / f"{key}.json", run, release, today)
    order = {t.id: n for n, (t, _) in enumerate(tests)}
    return RealRun(p.name, img.package, img.version, release, cpu_of(p.arch, vl), vl,
                   max(dates) if dates else "", dict(sorted(outcomes.items(), key=lambda kv: order[kv[0]])),
                   boots, secs)


def _save(path: Path, run: Any, release: str, date: str) -> None:
    d = {"release": release, "date": date, "stdout": run.stdout.hex(), "stderr": run.stderr.hex(),
         "exit_status": run.exit_status, "timed_out": run.timed_out, "errors": run.errors,
         "signal": run.signal, "stopped": run.stopped}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(d) + "\n")
    tmp.replace(path)


def _load(path: Path) -> tuple[Any, str, str] | None:
    from emukern.oracle.console import ProgramRun
    try:
        d = json.loads(path.read_text())
        run = ProgramRun(0, bytes.fromhex(d["stdout"]), bytes.fromhex(d["stderr"]), d["exit_status"],
                         bool(d["timed_out"]), list(d["errors"]), int(d["signal"]), int(d["stopped"]))
        return run, str(d["release"]), str(d["date"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


# ---- the recorded verdicts (real_kernel.json) ---------------------------------------------------

class RealTable:
    """Real-kernel verdicts recorded by ``emukern selftests --real KERNEL --record``.

    Layout: {"kernels": {NAME: {"package", "version", "release", "date", "vls": {VL: {"cpu", "date",
    "command", "tests": {TEST: {"verdict", "counts", "cause"}}}}}}}."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    @classmethod
    def load(cls, path: Path | None = None) -> "RealTable":
        from emukern.errors import ConfigError
        p = path or REAL_FILE
        if not p.exists():
            return cls({"kernels": {}})
        try:
            d = json.loads(p.read_text())
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read {p}: {exc}",
                              hint="re-create it with `emukern selftests --real KERNEL --record`") from None
        if not isinstance(d, dict) or not isinstance(d.get("kernels"), dict):
            raise ConfigError(f"{p} is not a real-kernel verdict table", hint="re-create it with --record")
        return cls(d)

    def kernel(self, name: str) -> dict[str, Any] | None:
        k = self.data["kernels"].get(name)
        return k if isinstance(k, dict) else None

    def lookup(self, kernel: str, vl: int | None, test: str) -> dict[str, Any] | None:
        k = self.kernel(kernel)
        if k is None or vl is None:
            return None
        return k.get("vls", {}).get(str(vl), {}).get("tests", {}).get(test)

    def record(self, run: RealRun, command: str) -> None:
        k = self.data["kernels"].setdefault(run.kernel, {})
        k.update({"package": run.package, "version": run.version, "release": run.release})
        k.pop("command", None)
        vls = k.setdefault("vls", {})
        old = vls.get(str(run.vl), {})
        tests = dict(old.get("tests", {}))
        # a run of some tests (--only) replaces their verdicts and keeps the others'; the
        # commands that recorded this VL's entries are all named
        kept = set(tests) - set(run.outcomes)
        tests.update({tid: {"verdict": o.verdict, "counts": o.counts, "cause": o.cause[:300]}
                      for tid, o in run.outcomes.items()})
        if kept and old.get("command") and command not in old["command"].split("; "):
            command = f"{old['command']}; {command}"
        vls[str(run.vl)] = {"cpu": run.cpu, "date": run.date, "command": command, "tests": tests}
        k["date"] = max(v.get("date", "") for v in vls.values())
        self.data["kernels"] = dict(sorted(self.data["kernels"].items()))
        k["vls"] = dict(sorted(vls.items(), key=lambda kv: int(kv[0])))

    def save(self, path: Path | None = None) -> None:
        doc = {"about": "Linux selftest verdicts on real Debian kernels under qemu-system, written by "
                        "`emukern selftests --real KERNEL --record`; `emukern selftests --kernel KERNEL` "
                        "fails any test passing here that emukern does not pass",
               "kernels": self.data["kernels"]}
        (path or REAL_FILE).write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")


def mark(outcome: Any, real: dict[str, Any] | None) -> None:
    """Put the real kernel's verdict beside an emukern outcome; a pass there that is not a pass
    here is the target check's failure (``real_regression``)."""
    if real is None:
        return
    outcome.real = str(real.get("verdict", "?"))
    outcome.real_counts = str(real.get("counts", ""))
    outcome.real_regression = outcome.real == "pass" and outcome.verdict != "pass"
    if outcome.unexpected and outcome.verdict == outcome.real:
        # expected.toml describes the default matrix; beside a real kernel the machine offers
        # that kernel's CPU (e.g. one VL only), and the real verdict is the reference: the same
        # verdict is no surprise (fake_sigreturn_sve_change_vl skips itself at VL 128 on both)
        outcome.unexpected = False
        outcome.expect_reason = f"{outcome.real}, as on the real kernel (expected.toml: {outcome.expected})"
