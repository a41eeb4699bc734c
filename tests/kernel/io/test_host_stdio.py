"""The guest's stdio under ``emukern run`` is the host's own descriptor (kernel/syscalls/stat.py
``_host_stdio_stat``, ioctl.py, read_write.py ``_stdio_write``): what fstat(1) says and how many
write() calls glibc's buffering makes, with stdout a pipe, a file, /dev/null and a terminal,
beside qemu-user running the same static binary (qemu passes the host's descriptor through);
a reader that goes away is EPIPE + SIGPIPE (exit 141), /dev/full is ENOSPC; and the Python
API's capture buffer keeps looking like a terminal (the figures recorded before stay)."""
from __future__ import annotations

import json
import os
import pty
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from emukern.api import Machine

QEMU = {"riscv64": "qemu-riscv64", "arm64": "qemu-aarch64"}
ARCHES = ["arm64", "riscv64"]
REPORT = re.compile(rb"mode=\d+ rdev=\d+:\d+ size=\d+ blksize=\d+ isatty=\d(\nstdout error)?")
LINES = 200


def _need_qemu(arch: str) -> str:
    q = shutil.which(QEMU[arch])
    if q is None:
        pytest.skip(f"{QEMU[arch]} (qemu-user) is not installed")
    return q


def _emukern(exe: Path, args: list[str], stdout, json_path: Path, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "emukern.cli", "run", "-q", "--json", str(json_path),
                           str(exe), *args], stdout=stdout, stderr=subprocess.PIPE, timeout=300, **kw)


def _qemu(arch: str, exe: Path, args: list[str], stdout) -> subprocess.CompletedProcess:
    return subprocess.run([_need_qemu(arch), "-strace", str(exe), *args], stdout=stdout,
                          stderr=subprocess.PIPE, timeout=120)


def _report(err: bytes) -> str:
    m = REPORT.search(err)
    assert m, err[-2000:]
    return m.group(0).decode()


def _emukern_writes(json_path: Path) -> int:
    """write() calls to stdout: the guest's report to stderr is the one other write."""
    return json.loads(json_path.read_text())["syscalls"]["write"] - 1


def _qemu_writes(err: bytes) -> int:
    return len(re.findall(rb"(?m)^\d+ write\(1,", err))


def _setup(kind: str, tmp: Path):
    if kind == "pipe":
        return subprocess.PIPE
    if kind == "file":
        return open(tmp, "wb")
    return subprocess.DEVNULL


@pytest.mark.qemu
@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("kind", ["pipe", "file", "null"])
def test_stdout_kind_and_buffering_match_qemu(cguest, tmp_path, arch, kind):
    _need_qemu(arch)
    exe = cguest("stdio_kind", arch)
    js = tmp_path / "run.json"
    out = _setup(kind, tmp_path / "emukern.out")
    e = _emukern(exe, [], out, js)
    qout = _setup(kind, tmp_path / "qemu.out")
    q = _qemu(arch, exe, [], qout)
    for f in (out, qout):
        if hasattr(f, "close"):
            f.close()
    assert e.returncode == 0 == q.returncode, e.stderr[-2000:]
    assert _report(e.stderr) == _report(q.stderr)
    want = {"pipe": "mode=10600 rdev=0:0", "file": "mode=100", "null": "mode=20666 rdev=1:3"}[kind]
    assert _report(e.stderr).startswith(want)
    assert _emukern_writes(js) == _qemu_writes(q.stderr) == 2        # 200 lines in 4 KiB blocks
    if kind == "pipe":
        assert e.stdout == q.stdout and e.stdout.count(b"\n") == LINES
    if kind == "file":
        assert (tmp_path / "emukern.out").read_bytes() == (tmp_path / "qemu.out").read_bytes()


def _run_on_pty(cmd: list[str], **kw) -> tuple[subprocess.CompletedProcess, bytes]:
    master, slave = pty.openpty()
    got = bytearray()

    def drain() -> None:
        while True:
            try:
                b = os.read(master, 65536)
            except OSError:
                return
            if not b:
                return
            got.extend(b)
    t = threading.Thread(target=drain, daemon=True)
    t.start()
    try:
        p = subprocess.run(cmd, stdout=slave, stderr=subprocess.PIPE, timeout=300, **kw)
    finally:
        os.close(slave)
        t.join(5)
        os.close(master)
    return p, bytes(got)


@pytest.mark.qemu
@pytest.mark.parametrize("arch", ARCHES)
def test_stdout_terminal_is_a_tty_and_line_buffered(cguest, tmp_path, arch):
    q_bin = _need_qemu(arch)
    exe = cguest("stdio_kind", arch)
    js = tmp_path / "run.json"
    e, eout = _run_on_pty([sys.executable, "-m", "emukern.cli", "run", "-q", "--json", str(js), str(exe)])
    q, qout = _run_on_pty([q_bin, "-strace", str(exe)])
    assert e.returncode == 0 == q.returncode, e.stderr[-2000:]
    # the pty's own mode and devpts' block size, with the pty number fixed at /dev/pts/0
    rep, qrep = _report(e.stderr), _report(q.stderr)
    assert rep.startswith("mode=206") and rep.endswith("rdev=136:0 size=0 blksize=1024 isatty=1")
    assert rep.split()[0] == qrep.split()[0] and qrep.endswith("blksize=1024 isatty=1")
    assert _emukern_writes(js) == _qemu_writes(q.stderr) == LINES     # one write per line
    assert eout.count(b"\n") == LINES == qout.count(b"\n")


@pytest.mark.parametrize("arch", ARCHES)
def test_capture_buffer_still_looks_like_a_terminal(cguest, arch):
    # the Python API (and pytest) capture output: fstat says /dev/pts/0, as before, so glibc
    # line-buffers and the recorded figures of such runs are unchanged
    r = Machine(arch=arch).load(cguest("stdio_kind", arch), []).run()
    assert r.exit_status == 0
    assert r.stderr.decode().startswith("mode=20620 rdev=136:0 size=0 blksize=4096 isatty=0")
    assert r.syscalls["write"] - 1 == LINES
    assert r.stdout.count(b"\n") == LINES


@pytest.mark.qemu
@pytest.mark.parametrize("arch", ARCHES)
def test_reader_gone_is_epipe_and_sigpipe(cguest, arch):
    q_bin = _need_qemu(arch)
    exe = cguest("stdio_kind", arch)

    def first_line(cmd: list[str]) -> tuple[int, bytes, bytes]:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        line = p.stdout.readline()
        p.stdout.close()                                   # `| head -1`
        err = p.stderr.read()
        return p.wait(timeout=300), line, err
    rc, line, err = first_line([sys.executable, "-m", "emukern.cli", "run", "-q", str(exe), "20000"])
    qrc, qline, _ = first_line([q_bin, str(exe), "20000"])
    assert line == qline == b"line 0 of the stdio buffering probe\n"
    assert b"internal error" not in err, err
    assert qrc == -13                                      # qemu's guest: killed by SIGPIPE
    assert rc == 128 + 13                                  # emukern: as a shell shows that


@pytest.mark.parametrize("arch", ARCHES)
def test_dev_full_is_enospc_to_the_guest(cguest, tmp_path, arch):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this host")
    exe = cguest("stdio_kind", arch)
    with open("/dev/full", "wb") as full:
        e = _emukern(exe, [], full, tmp_path / "run.json")
    assert e.returncode == 0, e.stderr[-2000:]
    # glibc's fflush fails (ENOSPC), the stream's error flag is set, the program goes on
    assert _report(e.stderr) == "mode=20666 rdev=1:7 size=0 blksize=4096 isatty=0\nstdout error"
    if shutil.which(QEMU[arch]):
        with open("/dev/full", "wb") as full:
            q = _qemu(arch, exe, [], full)
        assert _report(q.stderr) == _report(e.stderr)


def test_host_stdio_stat_is_the_same_every_run(cguest, tmp_path):
    # no host inode numbers or times: two runs into two different files give the same bytes
    exe = cguest("stdio_kind", "arm64")
    reps = []
    for i in range(2):
        with open(tmp_path / f"o{i}", "wb") as f:
            reps.append(_report(_emukern(exe, ["3"], f, tmp_path / f"r{i}.json").stderr))
    assert reps[0] == reps[1]


@pytest.mark.qemu
@pytest.mark.parametrize("arch", ARCHES)
def test_stdin_is_the_stdin_file_or_dev_null(cguest, tmp_path, arch):
    q_bin = _need_qemu(arch)
    exe = cguest("stdin_kind", arch)
    data = tmp_path / "in"
    data.write_bytes(b"abcdefgh")
    cli = [sys.executable, "-m", "emukern.cli", "run", "-q"]
    with_file = subprocess.run([*cli, "--stdin", str(data), str(exe)], capture_output=True, timeout=120)
    # (no input at all: /dev/null; a pipe or file on emukern's own fd 0 would feed the guest)
    without = subprocess.run([*cli, str(exe)], stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    with open(data, "rb") as f:
        q_file = subprocess.run([q_bin, str(exe)], stdin=f, capture_output=True, timeout=60)
    q_null = subprocess.run([q_bin, str(exe)], stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    assert with_file.stdout == q_file.stdout
    assert with_file.stdout.startswith(b"mode=100") and with_file.stdout.endswith(b" size=8 seek=2 read=3 'cde' end=8\n")
    assert without.stdout == q_null.stdout == b"mode=20666 size=0 seek=0 read=0 '' end=0\n"
