"""Sphinx configuration for emukern's manual and API reference.

Build: ``sphinx-build -W -b html docs docs/_build`` (``pip install '.[docs]'``);
tests/docs/test_sphinx_build.py runs the same command.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # document this checkout's emukern

import emukern  # noqa: E402

project = "emukern"
author = "the emukern developers"
copyright = "the emukern developers"
release = version = emukern.__version__
extensions = ["sphinx.ext.autodoc"]
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False}
exclude_patterns = ["_build"]
# the code-block languages the pages use: sh, python, toml, text
highlight_language = "text"
html_theme = "alabaster"
html_theme_options = {"description": "Linux vector and system-register traps, emulated", "fixed_sidebar": True}
