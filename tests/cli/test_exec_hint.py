"""A guest exec that fails with ENOENT on a path that exists on the host prints one line naming
--root (emukern/cli/run.py exec_root_hint; the kernel's do_execve notes the path in
k.exec_enoent); the guest's errno stays ENOENT."""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest


def _run(args, cwd):
    return subprocess.run([sys.executable, "-m", "emukern.cli", "run", "-q", *args], cwd=cwd,
                          capture_output=True, timeout=120, stdin=subprocess.DEVNULL)


@pytest.fixture
def guests(cguest, tmp_path):
    parent = tmp_path / "exec_path"
    shutil.copy(cguest("exec_path", "riscv64"), parent)
    shutil.copy(cguest("exec_path", "riscv64"), tmp_path / "sibling")
    return tmp_path


def test_enoent_on_a_host_path_names_root(guests):
    r = _run(["./exec_path", "./sibling"], cwd=guests)
    assert r.stdout == b"execve ./sibling: No such file or directory\n"    # the guest's errno, unchanged
    lines = [ln for ln in r.stderr.decode().splitlines() if "hint" in ln]
    assert len(lines) == 1
    assert "exec of ./sibling failed (ENOENT)" in lines[0] and f"--root {guests}" in lines[0]


def test_with_root_the_sibling_runs_and_no_hint(guests):
    r = _run(["--root", str(guests), "./exec_path", "./exec_path"], cwd=guests)
    assert "hint" not in r.stderr.decode()


def test_a_path_missing_on_the_host_too_gets_no_hint(guests):
    r = _run(["./exec_path", "./no-such-program"], cwd=guests)
    assert r.stdout == b"execve ./no-such-program: No such file or directory\n"
    assert "hint" not in r.stderr.decode()


def test_inside_root_missing_says_so(guests, tmp_path_factory):
    empty = tmp_path_factory.mktemp("emptyroot")
    r = _run(["--root", str(empty), "./exec_path", "./sibling"], cwd=guests)
    assert f"not inside --root {empty}" in r.stderr.decode()
