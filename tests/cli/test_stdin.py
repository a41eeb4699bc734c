"""The guest's standard input under ``emukern run`` (emukern/cli/run.py host_stdin_source,
kernel/files.py StdinFile.take): a pipe or a redirected file on the host's fd 0 feeds the guest
as ``qemu-aarch64 prog`` does; ``--stdin FILE`` and ``--stdin none`` still choose; a terminal
stays /dev/null unless ``--stdin -``; the same input bytes give the same run however the writer
chunked them."""
from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
CLI = [sys.executable, "-m", "emukern.cli", "run"]


@pytest.fixture
def summer(cguest):
    return cguest(HERE / "stdin_sum.c", "arm64")


def _run(args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, timeout=120, **kw)


def test_a_pipe_feeds_the_guest(summer):
    r = _run(["-q", str(summer)], input=b"1 2\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"read 2 numbers, sum 3\n"


def test_a_redirected_file_feeds_the_guest(summer, tmp_path):
    data = tmp_path / "in.txt"
    data.write_bytes(b"5 6 7\n")
    with open(data, "rb") as f:
        r = _run(["-q", str(summer)], stdin=f)
    assert r.stdout == b"read 3 numbers, sum 18\n"


def test_stdin_file_and_none_still_choose(summer, tmp_path):
    data = tmp_path / "in.txt"
    data.write_bytes(b"10 20\n")
    assert _run(["-q", "--stdin", str(data), str(summer)], input=b"1 2\n").stdout == b"read 2 numbers, sum 30\n"
    assert _run(["-q", "--stdin", "none", str(summer)], input=b"1 2\n").stdout == b"read 0 numbers, sum 0\n"
    assert _run(["-q", str(summer)], stdin=subprocess.DEVNULL).stdout == b"read 0 numbers, sum 0\n"


def test_a_terminal_stays_dev_null_unless_asked(summer):
    """A guest reading fd 0 must not wait on a tty in a script: without --stdin it reads EOF."""
    master, slave = pty.openpty()
    try:
        r = _run(["-q", str(summer)], stdin=slave)
    finally:
        os.close(slave)
        os.close(master)
    assert r.stdout == b"read 0 numbers, sum 0\n"


def test_same_bytes_same_run_however_chunked(summer, tmp_path):
    """One write or many: the guest's reads, its output and its cycle count are the same."""
    script = ("import sys,time\nfor w in sys.argv[1:]:\n    sys.stdout.write(w + ' '); sys.stdout.flush(); "
              "time.sleep(0.05)\nprint()\n")
    words = [str(i) for i in range(1, 40)]
    runs = []
    for i, chunked in enumerate((False, True)):
        js = tmp_path / f"r{i}.json"
        if chunked:
            feeder = subprocess.Popen([sys.executable, "-c", script, *words], stdout=subprocess.PIPE)
            r = _run(["-q", "--json", str(js), str(summer)], stdin=feeder.stdout)
            feeder.wait()
        else:
            r = _run(["-q", "--json", str(js), str(summer)], input=("".join(w + " " for w in words) + "\n").encode())
        assert r.returncode == 0, r.stderr
        doc = json.loads(js.read_text())
        runs.append((r.stdout, doc["cycles"], doc["user_insns"], doc["syscalls"]))
    assert runs[0] == runs[1]
    assert runs[0][0] == b"read 39 numbers, sum 780\n"


@pytest.mark.qemu
def test_a_pipe_is_described_as_qemu_user_describes_it(cguest):
    q = shutil.which("qemu-aarch64")
    if q is None:
        pytest.skip("qemu-aarch64 is not installed")
    exe = cguest("stdin_kind", "arm64")
    ours = _run(["-q", str(exe)], input=b"abcdefgh")
    theirs = subprocess.run([q, str(exe)], input=b"abcdefgh", capture_output=True, timeout=60)
    assert ours.stdout == theirs.stdout == b"mode=10600 size=0 seek=-1 read=3 'abc' end=-1\n"


def test_help_says_what_stdin_reads():
    r = _run(["--help"])
    text = " ".join(r.stdout.decode().split())
    assert "--stdin FILE|-|none" in text and "a terminal" in text and "pipe" in text
