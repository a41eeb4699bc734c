"""fstat of fds 0, 1 and 2 as ``emukern run`` hands the host's own descriptors to the guest, in
each host setup (all pipes; all regular files, stderr into stdout's file as `2>&1`; /dev/null
in and out; a mix), beside qemu-user running the same binary on them.  guest_asm/c/stdio_setups.c
--report prints type, permissions, rdev, size, st_blksize and isatty of each descriptor (nothing
that names an inode or a time) to fd 1 when it is a pipe or a file, else to fd 2.
tests/kernel/io/test_host_stdio.py covers fd 1 and fd 0 one at a time; this covers the three
together, and fd 2 as a file and as /dev/null."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ARCHES, need_qemu

SETUPS = ["pipes", "files", "null", "mixed"]


def _run(cmd: list[str], setup: str, tmp: Path) -> bytes:
    """The report, with fds 0-2 set up as ``setup`` says."""
    src = tmp / "in.txt"
    src.write_bytes(b"abc")
    out = tmp / "out.txt"
    if setup == "pipes":
        p = subprocess.run(cmd, input=b"abc", stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
        assert p.stderr == b"", p.stderr[-2000:]
        return p.stdout
    if setup == "null":
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           timeout=300)
        return p.stderr
    with open(src, "rb") as fin, open(out, "wb") as fout:
        if setup == "files":
            p = subprocess.run(cmd, stdin=fin, stdout=fout, stderr=subprocess.STDOUT, timeout=300)
        else:                                   # mixed: a pipe in, a file out, /dev/null for errors
            p = subprocess.run(cmd, input=b"abc", stdout=fout, stderr=subprocess.DEVNULL, timeout=300)
    assert p.returncode == 0
    return out.read_bytes()


@pytest.mark.qemu
@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("setup", SETUPS)
def test_fds_0_to_2_match_qemu(cguest, tmp_path, arch, setup):
    q_bin = need_qemu(arch)
    exe = cguest("stdio_setups", arch)
    (tmp_path / "e").mkdir()
    (tmp_path / "q").mkdir()
    e = _run([sys.executable, "-m", "emukern.cli", "run", "-q", str(exe), "--", "--report"], setup, tmp_path / "e")
    q = _run([q_bin, str(exe), "--report"], setup, tmp_path / "q")
    print(e.decode())
    assert e == q
    kinds = {"pipes": ("10000", "10000", "10000"), "files": ("100000", "100000", "100000"),
             "null": ("20000", "20000", "10000"), "mixed": ("10000", "100000", "20000")}[setup]
    lines = e.decode().splitlines()
    assert lines[0] == "as started:" and len(lines) == 4
    assert [ln.split()[3] for ln in lines[1:]] == list(kinds)
