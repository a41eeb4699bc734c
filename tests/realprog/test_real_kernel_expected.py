"""emukern against what Debian 13's real kernels printed for the same C probes.

tests/realprog/expected/<kernel>/<probe>.expected was recorded by record_expected.py: each probe
ran under the real Linux 6.12 (arm64 and riscv64, qemu-system, one boot per kernel) through
emukern.oracle's runner, and its stdout plus its exit status were kept.  Here ``emukern run
--kernel <that kernel>`` runs the same static binary set up as the runner sets it up (stdin
/dev/null, stdout and stderr pipes: the host's pipes, which emukern passes through), in a fresh
writable root with a /tmp as the real kernel's initramfs has, and must print the same bytes.

These run without qemu-system: only the recording needs the real kernel.  What they cover:
fstat of fds 0-2 as a pipe, a file and /dev/null (and glibc's buffering that follows from it),
a buffered line duplicated by fork, record locks (the lock-table cases of posix_locks.c, and
locks_limits.c's overflowing ranges, negative lengths, l_whence values and a three-process
F_SETLKW deadlock), clone3, AF_UNIX connect/accept with SCM_RIGHTS, SysV shm/sem/msg, and SysV
keys and sizes at their limits (sysv_limits.c)."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from probes import DEBIAN, KERNELS, PROBES, expected_path, runs_on

# Where emukern is known to answer otherwise than Linux 6.12, line by line (the rest of the probe
# is still compared): the pattern of the real kernel's line, and why.
# lines where emukern is known to answer otherwise than the recorded kernel, each with the reason
# (none left: the OFD_GETLK order and semop's E2BIG order are fixed in fcntl.py and ipc_sem.py)
KNOWN: list[tuple[re.Pattern[str], str]] = []

PROC_SELF_EXE_HINT = b"emukern: hint: the guest's exec of /proc/self/exe failed (ENOENT)"

CASES = [pytest.param(k, name, src, args, id=f"{k}-{name}")
         for k in KERNELS for name, src, args in PROBES if runs_on(name, k) and expected_path(k, name).exists()]


def test_every_probe_was_recorded_on_every_kernel():
    missing = [f"{k}/{n}" for k in KERNELS for n, _, _ in [*PROBES, *DEBIAN]
               if runs_on(n, k) and not expected_path(k, n).exists()]
    assert not missing, f"run tests/realprog/record_expected.py for: {missing}"


@pytest.mark.parametrize("kernel, name, probe, args", CASES)
def test_emukern_prints_what_the_real_kernel_printed(cguest, tmp_path, kernel, name, probe, args):
    arch = KERNELS[kernel]
    exe = cguest(probe, arch)
    root = tmp_path / "root"
    (root / "tmp").mkdir(parents=True)
    r = subprocess.run([sys.executable, "-m", "emukern.cli", "run", "-q", "--kernel", kernel, "--stdin", "none",
                        "--root", str(root), "--root-rw", str(exe), "--", *args],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    assert r.stderr == b"", r.stderr[-2000:]          # the real runs printed nothing there either
    got = (r.stdout + f"exit {r.returncode}\n".encode()).decode(errors="replace").splitlines()
    want = expected_path(kernel, name).read_bytes().decode(errors="replace").splitlines()
    known = [i for i, line in enumerate(want) if any(p.match(line) for p, _ in KNOWN)]
    if len(got) == len(want):
        skipped = [i for i in known if got[i] != want[i]]
        if skipped:
            print(f"{name}: {len(skipped)} known difference(s) left out: " + "; ".join(
                f"{want[i]!r} (emukern {got[i]!r})" for i in skipped))
        for i in skipped:
            got[i] = want[i]
    assert "\n".join(got) == "\n".join(want)


@pytest.mark.parametrize("kernel", list(KERNELS))
def test_debian_programs_print_what_the_real_kernel_printed(debian_root, tmp_path, kernel):
    """probes.DEBIAN: busybox's shell and applets (exec'd ones too, and `| head -1` under
    pipefail: 141), sqlite3 creating a file database and a second process reading it back,
    sqlite3's `> file 2>&1` and `2>&1 | cat` ordering, tar's stored and restored mtime; in order
    in one writable copy of the root, as they ran in order in one boot."""
    root = tmp_path / "root"
    shutil.copytree(debian_root(KERNELS[kernel]), root, symlinks=True)
    diffs = []
    for name, exe, args in DEBIAN:
        want = expected_path(kernel, name)
        if not want.exists():
            diffs.append(f"{name}: not recorded (run tests/realprog/record_expected.py {name})")
            continue
        r = subprocess.run([sys.executable, "-m", "emukern.cli", "run", "-q", "--kernel", kernel, "--stdin", "none",
                            "--root", str(root), "--root-rw", str(root / exe.lstrip("/")), "--", *args],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
        # busybox's shell first tries to exec /proc/self/exe for an applet, which emukern refuses
        # (test_debian_programs.py's xfail), and then finds the root's /usr/bin/<applet> link: the
        # output is the same, and the CLI says what happened in a hint of its own, left out here
        err = b"".join(ln for ln in r.stderr.splitlines(keepends=True) if not ln.startswith(PROC_SELF_EXE_HINT))
        got = r.stdout + err + f"exit {r.returncode}\n".encode()
        if got != want.read_bytes():
            diffs.append(f"{name}:\n--- emukern\n{got.decode(errors='replace')}--- Linux\n"
                         f"{want.read_text(errors='replace')}")
    assert not diffs, "\n".join(diffs)


@pytest.mark.linux
@pytest.mark.parametrize("kernel", list(KERNELS))
def test_the_real_kernel_still_prints_the_recordings(kernel):
    """Boots the real kernel (EMUKERN_LINUX_TESTS=1; see conftest.py) and checks that the
    recordings still hold: a newer Debian kernel build that answers otherwise shows here, not as
    an emukern failure.  The probes' boot is cached on disk by content (emukern.oracle)."""
    import record_expected

    from emukern.oracle import OracleError
    from emukern.oracle.session import Unavailable
    try:
        _, runs = record_expected.probe_outputs(kernel)
        _, debian = record_expected.debian_outputs(kernel)
    except Unavailable as exc:
        pytest.skip(exc.message)
    except OracleError as exc:
        if exc.message.startswith(("cannot fetch", "cannot unpack")):
            pytest.skip(exc.message)
        raise
    stale = [name for name, run in {**runs, **debian}.items()
             if record_expected._text(run) != expected_path(kernel, name).read_bytes()]
    assert not stale, f"the real kernel now prints otherwise for: {stale} (record_expected.py re-records)"
