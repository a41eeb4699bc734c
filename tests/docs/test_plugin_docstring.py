"""The examples in the pytest plug-in's module docstring (rendered in the API reference) run."""
from __future__ import annotations

import re

import emukern.pytest_plugin


def _examples() -> dict[str, str]:
    """Each ``def test_...`` literal block of the docstring, dedented, by function name."""
    doc = emukern.pytest_plugin.__doc__ or ""
    out = {}
    for block in re.findall(r"::\n\n((?:    .*\n|\n)+)", doc):
        code = "\n".join(line[4:] for line in block.splitlines())
        m = re.match(r"def (test_\w+)\(", code.strip())
        if m:
            out[m.group(1)] = code
    return out


def test_docstring_examples_run(run_guest) -> None:
    found = _examples()
    assert {"test_getpid", "test_vid"} <= set(found)
    for name, code in found.items():
        ns: dict = {}
        exec(compile(code, f"pytest_plugin:{name}", "exec"), ns)
        ns[name](run_guest)
