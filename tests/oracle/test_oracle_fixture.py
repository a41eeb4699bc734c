"""The `real_kernel` fixture as a user's suite sees it: it skips cleanly when qemu-system is
missing (run in a separate pytest process, so the patch cannot leak into this one)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

USER_CONFTEST = """
import shutil
import emukern.oracle.session as s
real_which = shutil.which
s.shutil = type("NoQemu", (), {"which": staticmethod(
    lambda name: None if name.startswith("qemu-system") else real_which(name))})
"""

USER_TEST = """
import pytest

@pytest.mark.linux
def test_hello_matches_linux(real_kernel):
    c = real_kernel.compare(%r, kernel="debian-13-riscv64")
    assert c.agree, c.report()
"""


def test_real_kernel_fixture_skips_without_qemu_system(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(USER_CONFTEST)
    (tmp_path / "test_user.py").write_text(USER_TEST % str(ROOT / "guest_asm" / "riscv" / "hello.S"))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    # the plugin comes through its pytest11 entry point, as in any user's suite
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(tmp_path)],
                       capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert "1 skipped" in out and "qemu-system-riscv64 not installed" in out, out
    assert "PytestUnknownMarkWarning" not in out          # the plugin registers the marker
