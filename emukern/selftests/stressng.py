"""`emukern selftests --suite stress-ng`: Debian's stress-ng as a real-program workload.

stress-ng's stressors, run with ``--verify``, check their own results (a pipe reads back what was
written, a futex wakes who waits, a matrix product matches ...), so a real program that drives
most of the syscall layer judges emukern by itself.  Each stressor runs alone, one instance, a
fixed seed and a bounded op count, from a guest root that holds Debian trixie's stress-ng and the
shared libraries it links (built once from the apt cache, :func:`build_root`).

Each run happens in a child Python process: a hang inside one handler cannot stall the suite (the
child is killed past its limit), and the child's own peak RSS (``wait4``) is the host memory the
run cost, which must stay under :data:`HOST_MEM_BOUND_MB`.

The verdict is stress-ng's own summary line (``passed: 1`` / ``failed: 1`` / ``skipped: 1``)
plus its exit status; for anything but a pass the row names the first cause emukern can see (the
runner's watch: a syscall emukern does not implement, a missing /proc file, a fatal signal) and
stress-ng's first ``fail:`` line.  ``stressng_expected.toml`` lists, per arch, the stressors that
do not pass and why; ``--qemu-user`` runs the same command under qemu-user (with ``-L`` of the
root) and ``--real KERNEL`` boots a real kernel with the root as its initramfs, to tell an
emukern bug from a stressor that needs something no user-mode emulator has.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

ARCHES = ("arm64", "riscv64")
VERSION = "0.19.02"                     # Debian trixie's stress-ng, what the expectations describe
EXPECTED_FILE = Path(__file__).with_name("stressng_expected.toml")
HOST_MEM_BOUND_MB = 1536                # peak RSS of one run's child process (Python + Unicorn + guest)
DEFAULT_OPS = 5
SIM_SECONDS = 20                        # stress-ng's own -t: a backstop behind the op bound (yield,
                                        # sem, schedmix stop only at it)

# Every stressor of the suite, in the order the issue lists them, with what bounds it beyond
# --<name>-ops: sizes a stressor would otherwise take per instance (mmap's 256 MB, ...) and, for
# socket-like stressors, AF_UNIX (emukern has no network stack to loop back through).
STRESSORS: dict[str, tuple[str, ...]] = {
    "fork": ("--fork-max", "4"),
    "clone": ("--clone-max", "4"),
    "exec": ("--exec-max", "4"),
    "futex": (),
    "pipe": (),
    "pipeherd": (),
    "mmap": ("--mmap-bytes", "256K"),
    "mremap": ("--mremap-bytes", "1M"),
    "mprotect": (),
    "brk": (),
    "stack": (),
    "sigq": (),
    "sigpending": (),
    "sigsuspend": (),
    "sigfd": (),
    "timerfd": (),
    "eventfd": (),
    "epoll": ("--epoll-domain", "unix"),
    "poll": (),                         # also select, pselect6 and ppoll (0.19.02 has no "select")
    "flock": (),
    "fcntl": (),
    "lockf": (),
    "sem": (),
    "shm-sysv": ("--shm-sysv-bytes", "1M"),
    "msg": (),
    "mq": (),
    "sock": ("--sock-domain", "unix"),
    "sockpair": (),                     # AF_UNIX socketpair: what sock means to do with "unix"
    "dup": (),
    "open": (),
    "rename": (),
    "link": (),
    "dir": ("--dir-dirs", "64"),
    "dentry": ("--dentries", "16"),
    "getdent": (),
    "sendfile": ("--sendfile-size", "64K"),
    "splice": ("--splice-bytes", "64K"),
    "tee": (),
    "vm-splice": ("--vm-splice-bytes", "64K"),
    "yield": (),
    "schedpolicy": (),                  # 0.19.02's sched_* stressors ("sched" is an option there)
    "schedmix": (),
    "affinity": (),
    "prctl": (),
    "rseq": (),
    "vecmath": (),
    "vecwide": (),
    "vecfp": ("--vecfp-method", "doublev16mul"),   # all 40 methods per op: minutes per op here
    "vecshuf": (),
    "matrix": ("--matrix-size", "32"),
    "fp": ("--fp-method", "doublediv"),          # likewise: one method, still checked by --verify
    "memcpy": (),
}


# host seconds a stressor gets when it needs another bound than --time-limit: link makes and
# removes thousands of hard links per bogo op (~200 s here); pipeherd never finishes under emukern
# (stressng_expected.toml), so it is not given two minutes to show that
TIME_LIMITS: dict[str, float] = {"link": 400.0, "pipeherd": 60.0}


def time_limit_for(name: str, default: float) -> float:
    return TIME_LIMITS.get(name, default)


def stressng_args(name: str, ops: int = DEFAULT_OPS, temp: str = "/tmp") -> list[str]:
    """argv[1:] of one bounded, self-checking run of stressor ``name``."""
    return ["--verify", "--seed", "1", f"--{name}", "1", f"--{name}-ops", str(ops), "-t", str(SIM_SECONDS),
            "--temp-path", temp, *STRESSORS[name]]


# ---- the guest root -----------------------------------------------------------------------------

def root_dir(arch: str) -> Path:
    from emukern.debian import cache_root
    return cache_root() / "test-roots" / f"stress-ng-{arch}"


def root_ready(arch: str) -> bool:
    """The root was built completely (its stamp is written last): no network needed to run."""
    return (root_dir(arch) / ".emukern-stress-ng").is_file()


def build_root(arch: str, progress: Callable[[str], None] | None = None) -> Path:
    """Debian trixie's stress-ng and its shared-library closure, unpacked into a cached guest root.

    Follows Depends/Pre-Depends of every lib* package (and zlib1g) through the private apt
    configuration (emukern.debian.AptFetcher, which caches each .deb) and unpacks each with
    ``dpkg-deb -x``; Architecture: all packages (libdrm-common ...) hold no code and are skipped.
    The root gets merged-/usr links (lib, bin, sbin) and a /tmp for the stressors' files."""
    import fcntl
    root = root_dir(arch)
    if root_ready(arch):
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    # one builder at a time (pytest -n 2 workers both find no root on a fresh machine)
    with open(root.parent / f".stress-ng-{arch}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not root_ready(arch):
            _unpack_closure(arch, root, progress)
    return root


def _unpack_closure(arch: str, root: Path, progress: Callable[[str], None] | None) -> None:
    from emukern.debian import AptFetcher, FetchError
    fetch = AptFetcher("trixie", arch)
    root.mkdir(parents=True, exist_ok=True)
    todo, seen = ["stress-ng"], set()
    while todo:
        pkg = todo.pop()
        if pkg in seen:
            continue
        seen.add(pkg)
        try:
            deb = fetch.download(pkg)
        except FetchError as exc:          # an Architecture: all package (data only)
            if progress:
                progress(f"skipped {pkg}: {exc}")
            continue
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
        deps = subprocess.run(["dpkg-deb", "-f", str(deb), "Depends", "Pre-Depends"],
                              capture_output=True, text=True, check=True).stdout
        for alt in re.sub(r"(Pre-)?Depends:", "", deps).replace("\n", ",").split(","):
            pname = alt.split("|")[0].strip().split(" ")[0].split(":")[0]
            if pname and (pname.startswith("lib") or pname == "zlib1g") and pname not in seen:
                todo.append(pname)
    for link in ("lib", "bin", "sbin"):
        if not (root / link).exists() and not (root / link).is_symlink():
            os.symlink(f"usr/{link}", root / link)
    (root / "tmp").mkdir(exist_ok=True)
    (root / ".emukern-stress-ng").write_text(f"stress-ng {VERSION} {arch}: {len(seen)} packages\n")


# ---- one run ------------------------------------------------------------------------------------

@dataclass
class Outcome:
    stressor: str
    arch: str
    verdict: str = "fail"               # pass | fail | skip | timeout
    cause: str = ""                     # the first cause emukern names, then stress-ng's own words
    detail: str = ""                    # stress-ng's first fail:/error: line
    exit_status: int | None = None
    sim_seconds: float = 0.0
    wall_seconds: float = 0.0
    host_mb: float = 0.0                # peak RSS of the run's child process
    qemu: str = ""                      # qemu-user's verdict for the same command ("" = not run)
    qemu_cause: str = ""
    real: str = ""                      # the real kernel's verdict (run now, or recorded)
    expected: str = "pass"
    expect_reason: str = ""
    unexpected: bool = False
    real_regression: bool = False       # the real kernel passes, emukern does not
    output: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


_SUMMARY = re.compile(r"\b(passed|failed|skipped):\s*(\d+)")
_FAIL_LINE = re.compile(r"stress-ng: (?:fail|error):\s*\[\d+\]\s*(.*)")


def summary_verdict(text: str, exit_status: int | None, name: str = "") -> tuple[str, str]:
    """stress-ng's verdict from its own summary lines and exit status: (verdict, its first
    fail:/error: line).  One rule for emukern, qemu-user and the real kernel."""
    counts = {k: int(v) for k, v in _SUMMARY.findall(text)}
    fails = [m.group(1).strip() for m in _FAIL_LINE.finditer(text)]
    own = [f for f in fails if name and f.startswith(f"{name}:")]
    detail = (own or fails or [""])[0][:200]
    if not detail and name:
        # a stressor that skips itself says why in an info line of its own ("exec: running as root")
        for line in text.splitlines():
            own = re.search(rf"\[\d+\]\s*({re.escape(name)}(?::| stressor ).*)", line)
            if own and not _SUMMARY.search(line):
                detail = own.group(1).strip()[:200]
                break
    if counts.get("failed", 0):
        return "fail", detail
    if counts.get("passed", 0) and exit_status == 0:
        return "pass", detail
    if counts.get("skipped", 0):
        return "skip", detail
    if not counts:
        return "fail", detail or "no stress-ng summary"
    return "fail", detail or f"exit status {exit_status}"


def _syscall_names(arch: str) -> None:
    """Name unimplemented syscalls in causes: arm64 and riscv64 share asm-generic's numbers, which
    the cross compilers' headers hold."""
    from emukern.selftests import runner
    if arch in runner._NR_NAMES:
        return
    gnu = "aarch64-linux-gnu" if arch == "arm64" else "riscv64-linux-gnu"
    names: dict[int, str] = {}
    try:
        text = Path(f"/usr/{gnu}/include/asm-generic/unistd.h").read_text()
    except OSError:
        return
    for m in re.finditer(r"#define\s+__NR(?:3264)?_(\w+)\s+(\d+)\b", text):
        names.setdefault(int(m.group(2)), m.group(1))
    runner._NR_NAMES[arch] = names


SLICE_CYCLES = 1_000_000


def run_in_process(name: str, arch: str, ops: int, time_limit: float) -> Outcome:
    """Run one stressor under emukern in this process (the child side of :func:`run_emukern`)."""
    from emukern.api import Machine
    from emukern.config import MachineConfig
    from emukern.errors import EmukernError
    from emukern.kernel.result import RunResult
    from emukern.selftests.runner import SIGNAMES, _Watch
    root = root_dir(arch)
    _syscall_names(arch)
    o = Outcome(name, arch)
    t0 = time.perf_counter()
    timed_out = False
    # a directory of its own in the root's /tmp: runs side by side (pytest -n 2) do not meet, and
    # what a killed run left behind does not make the next one's mkdir fail with EEXIST
    tmp = root / "tmp" / f"{name}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        mc = MachineConfig(arch=arch, root=str(root), root_rw=True)
        m = Machine(mc)
        m.load(root / "usr/bin/stress-ng", stressng_args(name, ops, temp=f"/tmp/{tmp.name}"))
        k = m.kernel
        assert k is not None
        watch = _Watch(k)
        k.trap_listeners.append(watch)
        k.run_cap = lambda cpu: cpu.now + SLICE_CYCLES
        while k.runloop.step_loop(4):
            if time.perf_counter() - t0 > time_limit:
                k.runloop.kill_everything()
                timed_out = True
                break
        k.run_cap = None
        r = RunResult.from_kernel(k)
    except EmukernError as exc:
        o.cause = f"emukern: {exc.message}"
        o.wall_seconds = time.perf_counter() - t0
        return o
    except Exception as exc:  # noqa: BLE001 - an emukern bug in one stressor is that row's cause
        o.cause = f"emukern internal error: {type(exc).__name__}: {exc}"
        o.wall_seconds = time.perf_counter() - t0
        return o
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    o.wall_seconds = time.perf_counter() - t0
    text = (r.stdout + r.stderr).decode("utf-8", "replace")
    o.output = text[-3000:]
    o.exit_status = r.exit_status
    o.sim_seconds = r.sim_seconds
    causes = list(watch.causes)
    if timed_out:
        o.verdict = "timeout"
        causes.insert(0, f"still running after {time_limit:.0f} s host time ({r.sim_seconds:.3f} s simulated)")
    elif r.stop_reason in ("budget", "deadlock"):
        o.verdict = "timeout" if r.stop_reason == "budget" else "fail"
        causes.append(r.message)
    else:
        o.verdict, o.detail = summary_verdict(text, r.exit_status, name)
        if r.signal:
            causes.append(f"fatal {SIGNAMES.get(r.signal, r.signal)}")
    if o.verdict != "pass":
        # an ENOSYS a passing stressor shrugs off (capget in fork) is not its cause; the
        # stressor's own words come first when it said why
        parts = ([o.detail] if o.detail else []) + causes[:3]
        o.cause = "; ".join(parts)
    return o


def _vm_hwm_kb(pid: int) -> int:
    """/proc/PID/status's VmHWM (the peak RSS of the process's current mm), 0 when gone."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def run_emukern(name: str, arch: str, ops: int = DEFAULT_OPS, time_limit: float = 120.0) -> Outcome:
    """One stressor under emukern, in a child process: its verdict, host time and peak RSS."""
    cmd = [sys.executable, "-m", "emukern.selftests.stressng", "--child", name, arch, str(ops), str(time_limit)]
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        killed = False
        deadline = t0 + time_limit + 60        # the child stops itself at time_limit; this is a hang
        hwm_kb = 0
        while True:
            hwm_kb = max(hwm_kb, _vm_hwm_kb(proc.pid))
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline and not killed:
                os.killpg(proc.pid, 9)
                killed = True
            time.sleep(0.2)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    # the child's own address space's peak (VmHWM, sampled while it runs): wait4's ru_maxrss
    # also counts the parent's pages the child held between fork and exec (Linux carries maxrss
    # across exec), so under a 2.6 GB pytest worker every run "peaked" at 2.6 GB
    host_mb = (hwm_kb or ru.ru_maxrss) / 1024.0
    last = text.strip().splitlines()[-1] if text.strip() else ""
    try:
        o = Outcome(**json.loads(last))
    except (ValueError, TypeError):
        o = Outcome(name, arch, cause=("hung inside emukern: killed after "
                                       f"{time_limit + 60:.0f} s host time" if killed else
                                       f"the run's process died ({proc.returncode}): {text.strip()[-300:]}"),
                    verdict="timeout" if killed else "fail")
    o.wall_seconds = time.perf_counter() - t0
    o.host_mb = round(host_mb, 1)
    if host_mb > HOST_MEM_BOUND_MB and o.verdict == "pass":
        o.verdict = "fail"
        o.cause = f"host memory: the run's process peaked at {host_mb:.0f} MiB (bound {HOST_MEM_BOUND_MB})"
    return o


QEMU_USER = {"arm64": "qemu-aarch64", "riscv64": "qemu-riscv64"}


def run_qemu_user(name: str, arch: str, ops: int = DEFAULT_OPS, time_limit: float = 120.0) -> tuple[str, str]:
    """The same command under qemu-user with ``-L`` of the root (the host kernel behind it):
    (verdict, its first fail: line or why it did not run)."""
    exe = shutil.which(QEMU_USER[arch])
    if exe is None:
        return "", f"{QEMU_USER[arch]} not installed"
    root = root_dir(arch)
    with tempfile.TemporaryDirectory(prefix="emukern-stressng-") as tmp:
        cmd = [exe, "-L", str(root), str(root / "usr/bin/stress-ng"), *stressng_args(name, ops, temp=tmp)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=tmp, start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=time_limit)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.communicate()
            return "timeout", f"still running after {time_limit:.0f} s"
    v, detail = summary_verdict(out.decode("utf-8", "replace"), proc.returncode, name)
    return v, detail


# ---- the real kernel ----------------------------------------------------------------------------

def run_real(kernel: str, arch: str, names: list[str], ops: int, time_limit: float,
             progress: Callable[[str], None] | None = None) -> dict[str, tuple[str, str, str]]:
    """Boot real ``kernel`` once under qemu-system with the root as its initramfs and run every
    stressor of ``names`` in it: stressor -> (verdict, first fail: line, output).  The initramfs
    has no /sys (stress-ng says "no CPUs found in /sys/devices/system/cpu" and goes on)."""
    from emukern.oracle.initramfs import Program
    from emukern.oracle.kernels import fetch_kernel, profile
    from emukern.oracle.qemu import boot
    img = fetch_kernel(profile(kernel, None))
    root = root_dir(arch)
    exe = root / "usr/bin/stress-ng"
    progs = [Program(exe, stressng_args(n, ops), timeout=SIM_SECONDS + int(time_limit), label=n, exe="/usr/bin/stress-ng",
                     cwd="/tmp", own_pid_ns=False) for n in names]
    if progress:
        progress(f"booting {kernel} ({img.package} {img.version}) for {len(names)} stressors")
    res = boot(img, progs, root=root)
    if progress:
        progress(f"{kernel}: Linux {res.log.release}, {res.seconds:.0f} s")
    out: dict[str, tuple[str, str, str]] = {}
    for i, n in enumerate(names):
        run = res.log.runs.get(i)
        if run is None or run.exit_status is None or run.timed_out:
            out[n] = ("timeout", f"did not finish within {SIM_SECONDS + int(time_limit)} s", "")
            continue
        text = (run.stdout + run.stderr).decode("utf-8", "replace")
        out[n] = (*summary_verdict(text, run.exit_status, n), text[-3000:])
    return out


# ---- expectations -------------------------------------------------------------------------------

def load_expected(path: Path | None = None) -> dict[str, dict[str, dict[str, str]]]:
    """``[<arch>.<stressor>]`` tables: verdict (default pass), reason, and the recorded verdicts
    of qemu-user and the real kernel (``qemu``, ``real``).  A stressor not listed must pass."""
    from emukern.errors import ConfigError
    p = path or EXPECTED_FILE
    try:
        data = tomllib.loads(p.read_text())
    except OSError as exc:
        raise ConfigError(f"cannot read {p}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p} is not valid TOML: {exc}") from None
    for arch, table in data.items():
        for name, e in table.items():
            if name not in STRESSORS:
                raise ConfigError(f"{p}: {arch}.{name} is not a stressor of the suite")
            if e.get("verdict", "pass") not in ("pass", "fail", "skip", "timeout"):
                raise ConfigError(f"{p}: {arch}.{name}: verdict {e.get('verdict')!r}")
            if e.get("verdict", "pass") != "pass" and not e.get("reason"):
                raise ConfigError(f"{p}: {arch}.{name} is expected to {e['verdict']} without a reason")
    return data


def judge(o: Outcome, expected: dict[str, dict[str, dict[str, str]]]) -> None:
    e = expected.get(o.arch, {}).get(o.stressor, {})
    o.expected = e.get("verdict", "pass")
    o.expect_reason = e.get("reason", "")
    if not o.real:
        o.real = e.get("real", "")
    if not o.qemu and e.get("qemu"):
        o.qemu = e["qemu"]
    o.unexpected = o.verdict != o.expected
    o.real_regression = o.real == "pass" and o.verdict != "pass" and o.expected == "pass"


# ---- the suite ----------------------------------------------------------------------------------

STYLE = {"pass": "green", "fail": "red", "skip": "yellow", "timeout": "magenta"}


def print_table(outcomes: list[Outcome], file: Any = None) -> None:
    from rich.console import Console
    from rich.table import Table
    console = Console(file=file or sys.stdout, width=220)
    table = Table(title=f"stress-ng {VERSION} --verify under emukern (one instance, bounded ops)", show_lines=True)
    for col in ("stressor", "arch", "emukern", "qemu-user", "real kernel", "sim s", "host s", "host MiB",
                "cause", "expected"):
        table.add_column(col, overflow="fold")
    for o in outcomes:
        v = f"[{STYLE.get(o.verdict, 'white')}]{o.verdict}[/]"
        if o.unexpected:
            v += " [bold red](UNEXPECTED)[/]"
        if o.real_regression:
            v += " [bold red](REAL KERNEL PASSES)[/]"
        table.add_row(o.stressor, o.arch, v, o.qemu or "-", o.real or "-", f"{o.sim_seconds:.3f}",
                      f"{o.wall_seconds:.1f}", f"{o.host_mb:.0f}", o.cause,
                      o.expected + (f": {o.expect_reason}" if o.expect_reason else ""))
    console.print(table)
    by: dict[str, int] = {}
    for o in outcomes:
        by[o.verdict] = by.get(o.verdict, 0) + 1
    bad = sum(o.unexpected for o in outcomes)
    console.print(f"{len(outcomes)} runs: " + ", ".join(f"{v} {c}" for v, c in sorted(by.items()))
                  + f"; {bad} unexpected; {sum(o.wall_seconds for o in outcomes):.0f} s host time; peak "
                  f"{max((o.host_mb for o in outcomes), default=0):.0f} MiB per run (bound {HOST_MEM_BOUND_MB})")


def run_suite(arches: list[str], names: list[str], ops: int = DEFAULT_OPS, time_limit: float = 120.0,
              qemu_user: bool = False, expected: dict[str, Any] | None = None,
              progress: Callable[[str], None] | None = None) -> list[Outcome]:
    expected = load_expected() if expected is None else expected
    outcomes = []
    for arch in arches:
        for n in names:
            o = run_emukern(n, arch, ops, time_limit_for(n, time_limit))
            if qemu_user:
                o.qemu, o.qemu_cause = run_qemu_user(n, arch, ops, max(time_limit, SIM_SECONDS + 30))
            judge(o, expected)
            outcomes.append(o)
            if progress:
                progress(f"{arch} {n}: {o.verdict}{' (UNEXPECTED)' if o.unexpected else ''} "
                         f"{o.wall_seconds:.1f} s {o.host_mb:.0f} MiB{': ' + o.cause[:120] if o.cause else ''}")
    return outcomes


def main(a: Any) -> int:
    """The CLI's --suite stress-ng (the other selftest options that apply: --only, --arch,
    --time-limit, --expected, --json, --list, --real, -v)."""
    from emukern.errors import ConfigError
    only = [n.strip() for item in (a.only or []) for n in item.split(",") if n.strip()]
    bad = [n for n in only if n not in STRESSORS]
    if bad:
        raise ConfigError(f"not a stressor of the stress-ng suite: {', '.join(bad)}",
                          hint="one of: " + ", ".join(STRESSORS))
    names = only or list(STRESSORS)
    real = getattr(a, "real", None)
    arches = [a.arch] if getattr(a, "arch", None) else list(ARCHES)
    if real:
        from emukern.oracle.kernels import PROFILES
        if real not in PROFILES:
            raise ConfigError(f"--real {real}: not a real kernel emukern can boot", hint="one of: " + ", ".join(PROFILES))
        arches = [PROFILES[real].arch]
    if a.list:
        for n in names:
            print(f"{n:12s} stress-ng {' '.join(stressng_args(n))}")
        return 0
    say = lambda s: print(f"stress-ng: {s}", file=sys.stderr, flush=True)   # noqa: E731
    for arch in arches:
        build_root(arch, progress=say)
    expected = load_expected(Path(a.expected) if getattr(a, "expected", None) else None)
    outcomes = run_suite(arches, names, DEFAULT_OPS, a.time_limit, qemu_user=getattr(a, "qemu_user", False),
                         expected=expected, progress=say if a.verbose else None)
    if real:
        verdicts = run_real(real, arches[0], names, DEFAULT_OPS, a.time_limit, progress=say)
        for o in outcomes:
            o.real = verdicts.get(o.stressor, ("", ""))[0]
            judge(o, expected)
    print_table(outcomes)
    if a.json:
        runs = []
        for o in outcomes:
            d = o.to_json()
            d.pop("wall_seconds")
            d.pop("host_mb")
            runs.append(d)
        Path(a.json).write_text(json.dumps({"stress-ng": VERSION, "runs": runs}, indent=2, sort_keys=True) + "\n")
    return 1 if any(o.unexpected or o.real_regression for o in outcomes) else 0


if __name__ == "__main__" and len(sys.argv) == 6 and sys.argv[1] == "--child":
    # the child of run_emukern: one run, its outcome as the last line of stdout
    _o = run_in_process(sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))
    print(json.dumps(_o.to_json()))
    sys.stdout.flush()
    os._exit(0)
