"""Sphinx configuration for emukern's API reference (build: sphinx-build -W -b html docs docs/_build)."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # document this checkout's emukern

import emukern  # noqa: E402

project = "emukern"
author = "the emukern developers"
release = version = emukern.__version__
extensions = ["sphinx.ext.autodoc"]
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False}
exclude_patterns = ["_build"]
html_theme = "alabaster"
