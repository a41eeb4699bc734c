"""The API reference builds from the docstrings with warnings as errors, and `pytest --fixtures`
documents emukern's fixtures."""
from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_api_reference_builds_without_warnings(tmp_path):
    pytest.importorskip("sphinx", reason="the docs extra is not installed (pip install -e '.[docs]')")
    out = tmp_path / "html"
    r = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                        str(REPO / "docs"), str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    text = html.unescape(re.sub(r"<[^>]+>", "", (out / "api.html").read_text()))
    # the public API is there, with its docstrings (not just names)
    for needle in ("One simulated machine", "Load a program into a fresh kernel", "Build a Machine from",
                   "What one run produced", "Every option of a machine", "The example guests",
                   "A function run(src, arch=None", "A function make(**options)"):
        assert needle in text, needle


def test_pytest_fixtures_are_documented(tmp_path):
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    r = subprocess.run([sys.executable, "-m", "pytest", "--fixtures", "-p", "no:cacheprovider", str(tmp_path)],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    section = r.stdout.split("fixtures defined from emukern.pytest_plugin", 1)[1]
    section = section.split("\n---", 1)[0]
    for name in ("guest_asm", "machine_factory", "run_guest"):
        assert re.search(rf"^{name} -- ", section, re.M), name
    assert "no docstring available" not in section
