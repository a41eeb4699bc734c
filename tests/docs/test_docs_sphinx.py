"""The manual builds with warnings as errors: ``sphinx-build -W -b html docs <tmp>``."""
from __future__ import annotations

import importlib.util
import re
import os
import subprocess
import sys
from pathlib import Path

import pytest

from docs_extract import REPO


def test_sphinx_build_without_warnings(tmp_path: Path) -> None:
    if importlib.util.find_spec("sphinx") is None:
        pytest.skip("sphinx is not installed (pip install '.[docs]')")
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                        str(REPO / "docs"), str(tmp_path / "html")],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, f"sphinx-build failed:\n{p.stdout[-4000:]}\n{p.stderr[-8000:]}"
    for page in ("index", "api", "guide/running", "dev/architecture"):
        assert (tmp_path / "html" / f"{page}.html").is_file(), page
    # the rendered pages include docstrings (autodoc): none may name an internal issue number
    hits = [f"{h.relative_to(tmp_path)}: {m.group(0)}" for h in (tmp_path / "html").rglob("*.html")
            for m in re.finditer(r"\b[Ii]ssues? #?\d+", re.sub(r"<[^>]+>", "", h.read_text()))]
    assert not hits, hits
