"""Real Debian trixie programs (busybox-static, sqlite3: the root of conftest.py) under
``emukern run``, beside qemu-user running the same binaries on this host's kernel.

qemu-user is a fair oracle only for what runs inside the one binary it was started on: it cannot
execve a foreign binary here (no binfmt_misc), and an exec that fails falls back to PATH, where
it would find the *host's* programs.  So every qemu run gets ``PATH=/nonexistent`` and an empty
stderr is asserted; busybox's shell runs its NOEXEC applets (echo, seq, sort, head, awk, ...) in
a forked child without exec, and the other applets (wc, tr, sed, uniq, tar) are compared one
qemu invocation each.  emukern's root has /usr/bin/<applet> links, so its shell finds them by
exec as a Debian system would.

Existing tests this directory does not repeat: sqlite3 on a file database
(tests/kernel/fs/test_sqlite_debian.py), python3 start-up with Debian's .pyc
(tests/kernel/fs/test_python_pyc.py), fstat of stdio and the write() counts of a C probe and its
EPIPE/SIGPIPE (tests/kernel/io/test_host_stdio.py)."""
from __future__ import annotations

import calendar
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from emukern.api import Machine

from conftest import ARCHES, need_qemu

BUSYBOX = "usr/bin/busybox"
QEMU_ENV = {"PATH": "/nonexistent", "TZ": "UTC"}     # no host program can stand in for an applet
# shell features and NOEXEC applets only (see the module docstring)
SCRIPT = r"""
echo start
seq 1 5 | sort -rn | head -3
printf '%s-%d\n' a 1 b 2
echo 'abc def' | awk '{print $2, length($1)}'
seq 3 | awk '{s += $1} END {print "sum", s}'
expr 6 \* 7
for i in 1 2 3; do echo "i=$i"; done | sort -r
false || echo "false: $?"
(exit 3); echo "subshell: $?"
echo a b c | cut -d' ' -f2
x=$(seq 1 100 | sort -n | head -1); echo "first $x"
case foo in f*) echo matched;; esac
echo done
"""


def _cli(arch_root: Path, args: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "emukern.cli", "run", "-q", "--root", str(arch_root),
                           *args], timeout=600, **kw)


def _qemu(arch: str, root: Path, args: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run([need_qemu(arch), "-L", str(root), str(root / BUSYBOX), *args],
                          env=QEMU_ENV, timeout=300, **kw)


@pytest.mark.qemu
@pytest.mark.parametrize("arch", ARCHES)
def test_busybox_shell_script_matches_qemu(debian_root, arch):
    root = debian_root(arch)
    need_qemu(arch)
    r = Machine(arch=arch, root=str(root)).load(root / BUSYBOX, ["sh", "-c", SCRIPT]).run()
    q = _qemu(arch, root, ["sh", "-c", SCRIPT], capture_output=True)
    assert q.stderr == b"" and q.returncode == 0, q.stderr
    assert (r.exit_status, r.stderr) == (0, b""), (r.message, r.stderr)
    assert r.stdout == q.stdout
    assert r.stdout.startswith(b"start\n5\n4\n3\na-1\nb-2\ndef 3\nsum 6\n42\ni=3\n") and r.stdout.endswith(b"done\n")


# applets that exec: one qemu run each, fed on stdin, against emukern's shell pipeline
APPLETS = [("wc -l", "a\nb\nc\n"), ("tr a-z A-Z", "hello\n"), ("sed s/o/0/g", "foo\nboo\n"),
           ("uniq -c", "b\nb\na\nb\n"), ("sort -u", "b\na\nb\n")]


@pytest.mark.qemu
@pytest.mark.parametrize("arch", ARCHES)
def test_exec_applets_match_qemu(debian_root, arch):
    root = debian_root(arch)
    need_qemu(arch)
    for cmd, data in APPLETS:
        r = Machine(arch=arch, root=str(root)).load(
            root / BUSYBOX, ["sh", "-c", f"printf %s {shlex.quote(data)} | {cmd}"]).run()
        q = _qemu(arch, root, cmd.split(), input=data.encode(), capture_output=True)
        assert q.stderr == b"" and q.returncode == 0, (cmd, q.stderr)
        assert (r.exit_status, r.stdout, r.stderr) == (0, q.stdout, b""), cmd


@pytest.mark.qemu
@pytest.mark.parametrize("arch", ARCHES)
def test_pipe_output_is_fully_buffered(debian_root, arch, tmp_path):
    """`seq 1 2000 | sort -n` with emukern's stdout a host pipe: seq writes into the guest's
    pipe and sort into the host's, each in 4 KiB blocks (st_blksize), so 8893 bytes are 3
    write() calls each, 6 in all, not 2000 per program as on a terminal."""
    root = debian_root(arch)
    need_qemu(arch)
    js = tmp_path / "run.json"
    e = _cli(root, ["--json", str(js), str(root / BUSYBOX), "--", "sh", "-c", "seq 1 2000 | sort -n"],
             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert e.returncode == 0, e.stderr[-2000:]
    writes = json.loads(js.read_text())["syscalls"]["write"]
    q = subprocess.run([need_qemu(arch), "-strace", "-L", str(root), str(root / BUSYBOX), "sh", "-c",
                        "seq 1 2000 | sort -n"], env=QEMU_ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=300)
    # two processes log into one stream: a call's line may be cut by the other's (pid, result)
    q_writes = re.findall(rb"write\(1,", q.stderr)
    print(f"{arch}: seq 1 2000 | sort -n: emukern {writes} write() calls, qemu-user {len(q_writes)}")
    assert e.stdout == q.stdout == b"".join(b"%d\n" % i for i in range(1, 2001))
    assert writes == len(q_writes) == 6


SQL = "select 'first'; select nosuch; select 'third';"


@pytest.mark.qemu
@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("into", ["file", "pipe"])
def test_stdout_and_stderr_together_keep_linux_order(debian_root, arch, tmp_path, into):
    """sqlite3 `... > out 2>&1` (and `2>&1 | cat`): its result row goes to stdout, fully
    buffered when that is a file or a pipe, and its error to unbuffered stderr, so the error
    reaches the shared file first and the row only at exit, as on Linux."""
    root = debian_root(arch)
    need_qemu(arch)
    args = ["-init", "/dev/null", ":memory:", SQL]          # -init: no ~/.sqliterc look-up

    def run(cmd: list[str], name: str, **kw) -> tuple[int, bytes]:
        if into == "pipe":
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600, **kw)
            return p.returncode, p.stdout
        with open(tmp_path / name, "wb") as f:
            p = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, timeout=600, **kw)
        return p.returncode, (tmp_path / name).read_bytes()
    rc, out = run([sys.executable, "-m", "emukern.cli", "run", "-q", "--root", str(root),
                   str(root / "usr/bin/sqlite3"), "--", *args], "e.out")
    qrc, qout = run([need_qemu(arch), "-L", str(root), str(root / "usr/bin/sqlite3"), *args], "q.out",
                    env=QEMU_ENV)
    assert (rc, out) == (qrc, qout)
    assert rc == 1 and out.startswith(b"Error: in prepare, no such column: nosuch\n") and out.endswith(b"\nfirst\n")


@pytest.mark.parametrize("arch", ARCHES)
def test_head_1_leaves_exit_status_141(debian_root, arch):
    """`emukern run busybox seq 1 1000000 | head -1` in a real shell: head exits after one
    line, the guest's next write() is EPIPE with SIGPIPE, and emukern exits 128+13 as a shell
    reports a process killed by SIGPIPE (bash's PIPESTATUS)."""
    if shutil.which("bash") is None or shutil.which("head") is None:
        pytest.skip("bash and head are needed for the pipeline")
    root = debian_root(arch)
    cmd = " ".join(shlex.quote(x) for x in [sys.executable, "-m", "emukern.cli", "run", "-q", "--root", str(root),
                                            str(root / BUSYBOX), "--", "seq", "1", "1000000"])
    p = subprocess.run(["bash", "-c", f'{cmd} | head -1; echo "status ${{PIPESTATUS[0]}} ${{PIPESTATUS[1]}}"'],
                       capture_output=True, timeout=600)
    assert p.stdout == b"1\nstatus 141 0\n", p.stderr[-2000:]
    assert b"internal error" not in p.stderr and b"Traceback" not in p.stderr, p.stderr[-2000:]


@pytest.mark.qemu
@pytest.mark.parametrize("arch", ARCHES)
def test_printf_then_fork_prints_twice_into_a_file(cguest, tmp_path, arch):
    """guest_asm/c/printf_fork.c: the unflushed line is inherited by the child when stdout is a
    regular file (fully buffered), and printed by both; on the API's terminal-like capture it
    left before the fork (once)."""
    q_bin = need_qemu(arch)
    exe = cguest("printf_fork", arch)
    twice = b"before fork\nchild\nbefore fork\nparent: child exit 3\n"
    with open(tmp_path / "e.out", "wb") as f:
        e = subprocess.run([sys.executable, "-m", "emukern.cli", "run", "-q", str(exe)], stdout=f,
                           stderr=subprocess.PIPE, timeout=300)
    with open(tmp_path / "q.out", "wb") as f:
        q = subprocess.run([q_bin, str(exe)], stdout=f, timeout=120)
    assert e.returncode == q.returncode == 0, e.stderr[-2000:]
    assert (tmp_path / "e.out").read_bytes() == (tmp_path / "q.out").read_bytes() == twice
    r = Machine(arch=arch).load(exe, []).run()
    assert r.stdout == b"before fork\nchild\nparent: child exit 3\n"


MTIME = calendar.timegm((2021, 3, 4, 5, 6, 7))          # 2021-03-04 05:06:07 UTC


def _tar_root(src: Path, dest: Path) -> Path:
    """A writable copy of the root with /data/f.txt (mode 0640, host mtime MTIME) and the
    passwd/group files tar names owners from (so both runs print root/root, not the host's)."""
    shutil.copytree(src, dest, symlinks=True)
    (dest / "data").mkdir()
    f = dest / "data" / "f.txt"
    f.write_text("hello tar\n")
    f.chmod(0o640)
    os.utime(f, (MTIME, MTIME))
    (dest / "etc").mkdir(exist_ok=True)
    (dest / "etc" / "passwd").write_text("root:x:0:0:root:/root:/bin/sh\n")
    (dest / "etc" / "group").write_text("root:x:0:\n")
    return dest


@pytest.mark.qemu
@pytest.mark.parametrize("arch", ARCHES)
def test_tar_keeps_the_host_mtime(debian_root, arch, tmp_path):
    """busybox tar -cvf then -tvf of a file whose host mtime is known: the archive's header and
    the listing carry that time (emukern's stat gives the guest the host file's times), as
    under qemu-user."""
    if os.geteuid() != 0:
        pytest.skip("the listing's owner is root/root only for a root-owned file")
    need_qemu(arch)
    root = _tar_root(debian_root(arch), tmp_path / "root")
    e = subprocess.run([sys.executable, "-m", "emukern.cli", "run", "-q", "--root", str(root), "--root-rw",
                        str(root / BUSYBOX), "--", "sh", "-c", "cd / && tar -cvf e.tar data/f.txt && tar -tvf e.tar"],
                       capture_output=True, timeout=600)
    q1 = _qemu(arch, root, ["tar", "-cvf", "q.tar", "data/f.txt"], cwd=root, capture_output=True)
    q2 = _qemu(arch, root, ["tar", "-tvf", "q.tar"], cwd=root, capture_output=True)
    assert e.returncode == q1.returncode == q2.returncode == 0, (e.stderr[-2000:], q1.stderr, q2.stderr)
    listing = b"-rw-r----- root/root        10 2021-03-04 05:06:07 data/f.txt\n"
    assert e.stdout == q1.stdout + q2.stdout == b"data/f.txt\n" + listing
    for name in ("e.tar", "q.tar"):
        with tarfile.open(root / name) as t:
            m = t.getmember("data/f.txt")
        assert (m.mtime, m.mode, m.uname, m.size) == (MTIME, 0o640, "root", 10), name
    assert (root / "e.tar").read_bytes() == (root / "q.tar").read_bytes()


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_busybox_shell_execs_proc_self_exe(debian_root, arch, tmp_path):
    """busybox's shell runs its non-NOEXEC applets by exec of /proc/self/exe, from a forked
    child: the child's mm keeps the exe file (dup_mm), so it names busybox, not ENOENT."""
    root = tmp_path / "root"
    (root / "usr" / "bin").mkdir(parents=True)
    shutil.copy(debian_root(arch) / BUSYBOX, root / BUSYBOX)
    r = Machine(arch=arch, root=str(root)).load(root / BUSYBOX, ["sh", "-c", "echo a | wc -l"]).run()
    assert (r.exit_status, r.stdout, r.stderr) == (0, b"1\n", b"")
