"""Every code example in README.md and docs/**/*.rst runs, as written.

* ``sh``: each command line (``\\`` continuations joined, ``#`` comments dropped) must be an
  ``emukern ...`` command; it runs as ``python -m emukern.cli ...`` in a scratch directory that
  links guest_asm/, docs/, tests/ and tools/ from the checkout, and must exit 0.  A comment
  ``# prints TEXT`` on the line makes the test check that stdout contains TEXT; ``# exits N``
  expects exit status N.
* ``python``: executed; every ``test_*`` function it defines is then called, with the pytest
  fixtures its parameters name (the emukern plug-in's ``run_guest``, ``guest_asm``, ...).
* ``toml``: parsed.

Examples marked ``example-skip`` (see docs_extract.py) are skipped with their reason, and
test_skipped_examples_are_few lists them.  Run: ``pytest tests/docs -n 0``.
"""
from __future__ import annotations

import inspect
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from docs_extract import REPO, Example, dangling_markers, examples

ALL = examples()
RUN = [e for e in ALL if e.skip is None]
SKIPPED = [e for e in ALL if e.skip is not None]
# Keep this small: every skipped example is a claim nobody checks.
MAX_SKIPPED = 12
LINKS = ("guest_asm", "docs", "tests", "tools")


def _workdir(tmp_path: Path) -> Path:
    for name in LINKS:
        (tmp_path / name).symlink_to(REPO / name)
    return tmp_path


def _commands(code: str) -> list[tuple[str, list[str], str]]:
    """(line as written, argv, trailing comment) for each command of a shell example."""
    joined, cur = [], ""
    for raw in code.splitlines():
        if raw.rstrip().endswith("\\"):
            cur += raw.rstrip()[:-1] + " "
            continue
        joined.append(cur + raw)
        cur = ""
    if cur:
        joined.append(cur)
    out = []
    for line in joined:
        words = shlex.split(line, comments=True)
        if not words:
            continue
        comment = line.split(" #", 1)[1].strip() if " #" in line else ""   # no "#" inside quotes here
        out.append((line.strip(), words, comment))
    return out


def _run_shell(ex: Example, cwd: Path) -> None:
    cmds = _commands(ex.code)
    assert cmds, f"{ex.id}: a shell example with no command"
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               COLUMNS="120", NO_COLOR="1")
    for line, words, comment in cmds:
        prog = words[0]
        assert prog in ("emukern", ".venv/bin/emukern") and not {"|", "&&", ";", ">"} & set(words), (
            f"{ex.id}: `{line}` is not a plain emukern command: run only emukern commands in examples, "
            f"or mark the example with an example-skip comment and a reason")
        want_status = 0
        if m := re.search(r"\bexits (\d+)", comment):
            want_status = int(m.group(1))
        p = subprocess.run([sys.executable, "-m", "emukern.cli", *words[1:]], cwd=cwd, env=env,
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=600)
        out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
        assert p.returncode == want_status, (
            f"{ex.id}: `{line}` exited {p.returncode}, expected {want_status}\n--- stdout\n{out[-3000:]}\n"
            f"--- stderr\n{err[-3000:]}")
        if m := re.search(r"\bprints (.+)$", comment):
            assert m.group(1).strip() in out, f"{ex.id}: `{line}` did not print {m.group(1)!r}:\n{out[-2000:]}"


def _run_python(ex: Example, cwd: Path, request: pytest.FixtureRequest) -> None:
    ns: dict = {"__name__": f"doc_example_{ex.line}"}
    exec(compile(ex.code, ex.id, "exec"), ns)
    for name, fn in list(ns.items()):
        if name.startswith("test_") and callable(fn):
            kwargs = {p: request.getfixturevalue(p) for p in inspect.signature(fn).parameters}
            fn(**kwargs)


@pytest.mark.parametrize("ex", ALL, ids=[e.id for e in ALL])
def test_example(ex: Example, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                 request: pytest.FixtureRequest) -> None:
    if ex.skip is not None:
        pytest.skip(f"example-skip: {ex.skip}")
    cwd = _workdir(tmp_path)
    if ex.lang == "sh":
        _run_shell(ex, cwd)
    elif ex.lang == "python":
        monkeypatch.chdir(cwd)
        _run_python(ex, cwd, request)
    elif ex.lang == "toml":
        tomllib.loads(ex.code)


def test_examples_found() -> None:
    files = {e.file for e in ALL}
    assert "README.md" in files and len(RUN) >= 20, (len(RUN), sorted(files))


def test_skipped_examples_are_few() -> None:
    listing = "\n".join(f"  {e.id}: {e.skip}" for e in SKIPPED)
    print(f"\n{len(RUN)} examples run, {len(SKIPPED)} skipped:\n{listing}")
    assert len(SKIPPED) <= MAX_SKIPPED, f"too many skipped examples ({len(SKIPPED)}):\n{listing}"
    assert all(e.skip and e.skip != "(no reason given)" for e in SKIPPED), listing


def test_no_dangling_skip_markers() -> None:
    assert dangling_markers() == [], "example-skip markers with no example right after them"


def test_no_internal_issue_numbers() -> None:
    """User-facing text names changes by patch subject and author, never by internal issue number."""
    hits = []
    for path in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.rst"))]:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"\bissues? #?\d+", line, re.IGNORECASE):
                hits.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert hits == [], "\n".join(hits)
