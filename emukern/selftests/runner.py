"""Run built selftests under emukern: one run per test x configuration, judged by the test itself.

A configuration is one value of every switch the test exercises and one vector length (SVE VL on
arm64, VLEN on RISC-V).  The verdict is the test's own: its kselftest TAP counts and ksft exit
code, or its exit status.  For anything but a pass the runner names the first cause emukern can
see in the run: a syscall it does not implement (-ENOSYS, from the unknown-syscall counts), a
/proc or /sys path that does not exist, or the fatal signal that ended the test (and whether the
test had installed a handler for it that emukern did not run).

Endless stress tests (sve-test, fpsimd-test) are run for a bounded simulated time and then sent
the signal their harness ends them with (fp-stress and the *-stress scripts send SIGTERM); their
SIGTERM handler reports "no error" and exits 0 on a real kernel.
"""
from __future__ import annotations

import contextlib
import itertools
import os
import re
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from emukern.config import MachineConfig
from emukern.kernel.policies import SWITCHES
from emukern.kernel.result import RunResult
from emukern.selftests import tap as taplib
from emukern.selftests.build import Built
from emukern.selftests.catalog import RVV_VLENS, SVE_VLS, SelfTest
from emukern.kernel.syscalls import signal as syscalls_signal
from emukern.kernel.syscalls import table as syscalls_table

SIGNAMES = {1: "SIGHUP", 2: "SIGINT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE",
            9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2", 13: "SIGPIPE", 14: "SIGALRM",
            15: "SIGTERM", 17: "SIGCHLD"}

# named kernel profiles for --kernel: every switch at the value before / after its patch
KERNELS: dict[str, dict[str, str]] = {
    "after": {n: s.default for n, s in SWITCHES.items()},
    "before": {"riscv-vstate-sysctl": "absent", "riscv-discard": "eager", "arm64-mrs": "hook-list",
               "arm64-sve": "legacy"},
}


# switch names as the table shows them
SHORT = {"arm64-sve": "sve", "arm64-mrs": "mrs", "riscv-discard": "discard", "riscv-vstate-sysctl": "vstate-sysctl"}


@dataclass(frozen=True)
class Config:
    policies: tuple[tuple[str, str], ...]   # (switch, value), sorted
    vl: int | None                          # SVE VL / RVV VLEN in bits, None = machine default

    def label(self, arch: str) -> str:
        parts = [f"{SHORT.get(n, n)}={v}" for n, v in self.policies]
        if self.vl is not None:
            parts.append(("vl=" if arch == "arm64" else "vlen=") + str(self.vl))
        return " ".join(parts) or "default"

    def policy_dict(self) -> dict[str, str]:
        return dict(self.policies)


def matrix(t: SelfTest, pinned: dict[str, str] | None = None, vls: tuple[int, ...] | None = None) -> list[Config]:
    """Every value of every switch ``t`` exercises x every VL (``pinned`` switches stay put)."""
    pinned = pinned or {}
    names = [n for n in t.switches if n in SWITCHES]
    axes = [((pinned[n],) if n in pinned else SWITCHES[n].values) for n in names]
    if t.vector:
        vl_axis: tuple[int | None, ...] = vls or (SVE_VLS if t.arch == "arm64" else RVV_VLENS)
    else:
        vl_axis = (vls[0],) if vls and len(vls) == 1 else (None,)
    out = []
    for combo in itertools.product(*axes):
        for vl in vl_axis:
            out.append(Config(tuple(zip(names, combo)), vl))
    return out


@dataclass
class Outcome:
    test: str
    config: str
    verdict: str                  # pass | fail | skip | timeout | not built
    counts: str = ""              # pass/fail/skip from TAP
    cause: str = ""               # first cause emukern can name
    exit_status: int | None = None
    detail: str = ""              # the test's own first failure / last words
    sim_seconds: float = 0.0
    wall_seconds: float = 0.0
    expected: str = ""            # the expected verdict from expected.toml
    expect_reason: str = ""       # why (e.g. "expected under this policy: ...")
    unexpected: bool = False
    output: str = ""              # stdout tail (JSON only)
    vl: int | None = None         # the configuration's SVE VL / RVV VLEN
    real: str = ""                # the real kernel's verdict for this test and VL (real_kernel.json)
    real_counts: str = ""
    real_regression: bool = False # the real kernel passes it, emukern does not (the target check)
    figures: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class _Watch:
    """Trap listener: remembers, in order, what emukern could not give the test."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.causes: list[str] = []
        self._open: dict[int, str] = {}

    def __call__(self, phase: str, cpu: Any, task: Any, trap: Any) -> None:
        if trap.kind.value != "syscall":
            return
        if phase == "enter":
            regs = trap.sysregs or cpu.syscall_regs()
            nr = regs[0]
            name = syscalls_table.syscall_name(self.kernel, nr)
            if name in ("openat", "newfstatat", "readlinkat", "faccessat", "statx", "execve"):
                ptr = regs[2] if name != "execve" else regs[1]
                try:
                    self._open[task.tid] = task.mm.read_cstr(ptr).decode("utf-8", "replace")
                except Exception:      # an unreadable pointer is the test's EFAULT, not a cause
                    self._open[task.tid] = ""
            else:
                self._open.pop(task.tid, None)
            return
        path = self._open.pop(task.tid, None)
        ret = trap.ret
        if ret is None:
            return
        if ret == -38 and trap.handler.startswith("syscall_"):
            self._add(f"ENOSYS {syscall_label(self.kernel, int(trap.handler[8:]))}")
        elif path and ret == -2 and (path.startswith("/proc") or path.startswith("/sys")):
            self._add(f"missing {path}")

    def _add(self, cause: str) -> None:
        if cause not in self.causes:
            self.causes.append(cause)


_NR_NAMES: dict[str, dict[int, str]] = {}


def load_syscall_names(arch: str, include: Path | None) -> None:
    """Syscall names from the release's own asm/unistd_64.h (emukern's table knows fewer)."""
    if include is None or arch in _NR_NAMES:
        return
    names: dict[int, str] = {}
    try:
        text = (include / "asm" / "unistd_64.h").read_text()
    except OSError:
        return
    for m in re.finditer(r"#define\s+__NR_(\w+)\s+(\d+)", text):
        names.setdefault(int(m.group(2)), m.group(1))
    _NR_NAMES[arch] = names


def syscall_label(kernel: Any, nr: int) -> str:
    name = _NR_NAMES.get(kernel.config.arch, {}).get(nr)
    return f"{name} ({nr})" if name else f"syscall {nr}"


@contextlib.contextmanager
def _cwd(path: Path) -> Iterator[None]:
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def _handler_installed(task: Any, sig: int) -> bool:
    acts = getattr(task, "sigactions", None) or {}
    raw = acts.get(sig)
    return bool(raw) and int.from_bytes(bytes(raw[:8]), "little") not in (0, 1)


@dataclass
class RunOptions:
    time_limit: float = 120.0            # host seconds per run
    stress_seconds: float = 0.001        # simulated seconds before the stop signal
    base: MachineConfig | None = None    # run options from the command line
    # the CPU qemu-system gives the real kernel (--kernel of a real profile, --real): SVE VLs are
    # the powers of two up to the row's VL (QEMU's sve<VL>=on) and ID-register reads trap (FEAT_IDST)
    qemu_cpu: bool = False


def run_one(t: SelfTest, built: Built, cfg: Config, opts: RunOptions,
            log: Callable[[str], None] | None = None) -> Outcome:
    label = cfg.label(t.arch)
    if not built.ok:
        return Outcome(t.id, label, "not built", cause=built.reason)
    base = opts.base or MachineConfig()
    mc = MachineConfig(**{k: getattr(base, k) for k in base.__dataclass_fields__})
    mc.arch = t.arch
    mc.policies = {**mc.policies, **cfg.policy_dict()}
    if t.rlimits:
        mc.rlimits = {**mc.rlimits, **dict(t.rlimits)}
    if t.freq_hz:
        mc.freq_hz = t.freq_hz
        mc.timer_freq = min(mc.timer_freq, t.freq_hz)
    if cfg.vl is not None:
        if t.arch == "arm64":
            mc.sve_vl = cfg.vl
            if opts.qemu_cpu:
                from emukern.oracle.qemu import sve_vls
                mc.sve_vls = sve_vls(cfg.vl)
                mc.idst = True
            elif cfg.vl not in mc.sve_vls:
                mc.sve_vls = tuple(sorted({*mc.sve_vls, cfg.vl}))
        else:
            mc.vlen = cfg.vl
    assert built.path is not None
    scratch: tempfile.TemporaryDirectory[str] | None = None
    rundir = built.path.parent
    if mc.root is None and t.generic:
        # a generic test creates files beside itself (kcmp's kcmp-test-file, non-regular's FIFOs,
        # map_populate's tmpfile() in /tmp), as it may in the real-kernel runner's writable
        # initramfs: it runs in a scratch copy of its program and helpers, writable, with a /tmp
        scratch = tempfile.TemporaryDirectory(prefix="emukern-selftest-")
        mc.root = scratch.name
        mc.root_rw = True
        rundir = Path(scratch.name)
        (rundir / "tmp").mkdir(mode=0o1777, exist_ok=True)
        if t.own_dir:
            # staged in /<its directory>/ and started there: the host cwd inside the root is
            # the guest cwd the first process gets (kernel/fs/namei.py fs_init_task)
            rundir = rundir / Path(t.dir).name
            rundir.mkdir()
        _stage(t, built.path, rundir)
    elif mc.root is None:
        # the test's build directory is the guest's root (and its cwd), as kselftest's runner
        # runs each test in its directory: `./rdvl-sve` and fp-stress's children resolve there,
        # and execve never reaches a host path outside it
        mc.root = str(built.path.parent)
    try:
        return _run_in(t, built, cfg, opts, mc, label, rundir)
    finally:
        if scratch is not None:
            scratch.cleanup()


def _stage(t: SelfTest, prog: Path, dest: Path) -> None:
    """Copy ``t``'s program and the helpers it uses (files, symlinks, directories) into ``dest``."""
    shutil.copy2(prog, dest / prog.name)
    for h in t.helpers:
        src = prog.parent / h
        if src.is_symlink():
            (dest / h).symlink_to(os.readlink(src))
        elif src.is_dir():
            shutil.copytree(src, dest / h, symlinks=True)
        elif src.is_file():
            shutil.copy2(src, dest / h)
    (dest / "tmp").mkdir(mode=0o1777, exist_ok=True)


def _run_in(t: SelfTest, built: Built, cfg: Config, opts: RunOptions, mc: MachineConfig, label: str,
            rundir: Path) -> Outcome:
    """One run of ``t`` with its machine configured, the guest root at ``rundir``."""
    from emukern.api import Machine
    from emukern.errors import EmukernError
    assert built.path is not None
    t0 = time.perf_counter()
    try:
        with _cwd(rundir):
            m = Machine(mc)
            # a generic test gets argv[0] "./<name>", as kselftest's runner starts it from its
            # directory (null-argv and execveat re-exec argv[0], which must resolve in the guest)
            m.load(f"./{built.path.name}" if t.generic else built.path, list(t.args))
            k = m.kernel
            assert k is not None
            watch = _Watch(k)
            k.trap_listeners.append(watch)
            stopped, timed_out = _drive(k, t, opts, t0)
            r = RunResult.from_kernel(k)
    except EmukernError as exc:
        return Outcome(t.id, label, "fail", cause=f"emukern: {exc.message}",
                       wall_seconds=time.perf_counter() - t0)
    except Exception as exc:  # noqa: BLE001 - an emukern bug in one run is reported in its row,
        # and the suite goes on (the row is UNEXPECTED unless expected.toml lists it)
        return Outcome(t.id, label, "fail", cause=f"emukern internal error: {type(exc).__name__}: {exc}",
                       wall_seconds=time.perf_counter() - t0)
    wall = time.perf_counter() - t0
    out = r.stdout.decode("utf-8", "replace")
    err = r.stderr.decode("utf-8", "replace")
    o = Outcome(t.id, label, "fail", exit_status=r.exit_status, sim_seconds=r.sim_seconds,
                wall_seconds=wall, output=(out + err)[-4000:])
    tp = taplib.parse(out)
    if tp.seen:
        o.counts = tp.counts()
    causes = list(watch.causes)
    init = k.init_task
    if timed_out:
        o.verdict = "timeout"
        limit = host_limit(t, opts)
        causes.append(f"still running after {limit:.0f} s host time (per-test limit)")
    elif r.stop_reason in ("budget", "deadlock"):
        o.verdict = "timeout" if r.stop_reason == "budget" else "fail"
        causes.append(r.message)
    elif t.kind == "stress":
        o.verdict = _stress_verdict(t, r, out + err, stopped, causes, init)
    elif r.signal:
        sig = r.signal
        why = (r.fault or {}).get("why", "")
        handled = init is not None and _handler_installed(init, sig)
        causes.append(f"fatal {SIGNAMES.get(sig, sig)}" + (" (the test's handler was not run)" if handled else "")
                      + (f": {why}" if why and not why.startswith("killed by signal") else ""))
    else:
        o.verdict = exit_verdict(t, r.exit_code, out, tp)
        if t.kind == "bench":
            o.figures = parse_pidbench(out)
    # fatal signals in other processes of the test (kselftest_harness runs each case in a child)
    for tid in sorted(k.tasks):
        task = k.tasks[tid]
        rep = getattr(task, "fault_report", None)
        if task is init or task.tgid != task.tid or not rep:
            continue
        sig = rep.get("signal")
        handled = _handler_installed(task, sig) if sig else False
        why = rep.get("why", "")
        c = (f"fatal {SIGNAMES.get(sig, sig)} in pid {task.tgid}" + (" (its handler was not run)" if handled else "")
             + (f": {why}" if why and not why.startswith("killed by signal") else ""))
        if c not in causes:
            causes.append(c)
    if o.verdict not in ("pass", "skip"):
        o.cause = "; then ".join(causes[:4]) if causes else (
            f"{tp.failed} of its cases failed" if tp.failed else _last_words(out + err, tp))
        o.detail = tp.first_failure or tp.bail_out or _last_words(out + err, tp)
    elif causes and o.verdict == "skip":
        o.cause = causes[0]
    return o


def exit_verdict(t: SelfTest, code: int | None, out: str, tp: taplib.Tap) -> str:
    """The verdict of a test that exited (no fatal signal, not a stress test), from its exit code
    and TAP output: one rule for emukern's runs and the real kernel's (emukern.selftests.real)."""
    if t.kind == "tap":
        v = {0: "pass", 4: "skip"}.get(code or 0, "fail") if code is not None else "fail"
        if tp.failed or tp.error:
            return "fail"
        if v == "pass" and tp.skipped and not tp.passed:
            return "skip"               # every case skipped itself (e.g. no SME): not a pass
        return v
    if t.kind == "exit" and t.exit_ok != (0,):
        return "pass" if code in t.exit_ok and not out.strip() else "fail"
    if t.kind == "bench":
        return "pass" if code == 0 and "SVE used per syscall" in out else "fail"
    return "pass" if code == 0 else "fail"


def stress_verdict(t: SelfTest, stopped: bool, signal: int, exit_code: int | None, out: str,
                   causes: list[str], handled: bool) -> str:
    """A stress test's verdict: it must still run at its stop signal, then report "no error" from
    the handler and exit 0 (the same rule for emukern's and the real kernel's runs)."""
    sig = SIGNAMES.get(t.stop_signal, str(t.stop_signal))
    if not stopped:
        causes.append(f"ended before the {sig} that stops it: " + (
            f"fatal {SIGNAMES.get(signal, signal)}" if signal else f"exit {exit_code}"))
        return "fail"
    if signal == t.stop_signal:
        causes.append(f"killed by the {sig} that should end it" +
                      (": its handler (which reports the result) was not run" if handled else ""))
        return "fail"
    if signal:
        causes.append(f"fatal {SIGNAMES.get(signal, signal)} after {sig}")
        return "fail"
    if exit_code == 0 and "no error" in out:
        return "pass"
    return "fail"


def host_limit(t: SelfTest, opts: RunOptions) -> float:
    """The host seconds one run of ``t`` may take: --time-limit, lowered by the test's own bound,
    or raised to the time a known-slow test needs (never above what that test needs)."""
    limit = min(opts.time_limit, t.time_limit) if t.time_limit else opts.time_limit
    return max(limit, t.slow_limit) if t.slow_limit else limit


SLICE_CYCLES = 1_000_000      # how far a CPU runs between checks of the host time limit


def _drive(k: Any, t: SelfTest, opts: RunOptions, t0: float) -> tuple[bool, bool]:
    """Run ``k`` in short slices (the kernel's ``run_cap``, as the debugger's stepping uses it):
    stop a stress test with its harness's signal at the bound, honour the host time limit."""
    stop_at = int(opts.stress_seconds * k.config.freq_hz) if t.kind == "stress" else None
    state = {"stopped": False}
    limit = host_limit(t, opts)

    def cap(cpu: Any) -> int:
        lim = cpu.now + SLICE_CYCLES
        if stop_at is not None and not state["stopped"]:
            lim = min(lim, max(stop_at, cpu.now + 1))
        return lim

    k.run_cap = cap
    try:
        while True:
            if not k.runloop.step_loop(4):
                return state["stopped"], False
            if time.perf_counter() - t0 > limit:
                k.runloop.kill_everything()
                return state["stopped"], True
            if stop_at is not None and not state["stopped"] and k.runloop.elapsed >= stop_at:
                init = k.init_task
                if init is not None and init.alive:
                    # what fp-stress does to its children: kill(pid, SIGTERM), from outside the task
                    syscalls_signal.sys_kill(k, k.cpus[init.cpu], init, init.tgid, t.stop_signal)
                state["stopped"] = True
    finally:
        k.run_cap = None


def _stress_verdict(t: SelfTest, r: Any, out: str, stopped: bool, causes: list[str], init: Any) -> str:
    handled = init is not None and _handler_installed(init, t.stop_signal)
    return stress_verdict(t, stopped, r.signal or 0, r.exit_code, out, causes, handled)


def _last_words(text: str, tp: taplib.Tap) -> str:
    for line in reversed(text.strip().splitlines()):
        s = line.strip()
        if s and not s.startswith("# Totals") and not s.startswith("# Planned"):
            return s[:160]
    return ""


_PID = re.compile(r"^(No SVE|SVE used once|SVE used per syscall|Iterations per test|SVE VL):\s*(\d+)", re.M)


def parse_pidbench(out: str) -> dict[str, int]:
    """fp-pidbench's own lines: iterations, the VL, and CNTVCT ticks for each loop."""
    return {m.group(1): int(m.group(2)) for m in _PID.finditer(out)}
