"""The examples in emukern.api's docstrings run (the API reference renders them)."""
from __future__ import annotations

import doctest
from pathlib import Path

import emukern.api

ROOT = Path(__file__).resolve().parents[2]


def test_api_docstring_examples_run(monkeypatch) -> None:
    monkeypatch.chdir(ROOT)            # the examples name guest_asm/ relative to the checkout
    result = doctest.testmod(emukern.api, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 6 and result.failed == 0, result
