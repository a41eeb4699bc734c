"""Finds the code examples in README.md and docs/**/*.rst (shared by the tests in tests/docs).

An example is a fenced block (```sh / ```python / ```toml) in the README, or a
``.. code-block:: sh|python|toml`` directive in a page of the manual.  Blocks in any other
language (``text``: prompts, transcripts, file layouts) are not examples.

An example that is too slow or needs the network is marked, on the line just before it, with

* README.md:  ``<!-- example-skip: REASON -->``
* .rst:       ``.. example-skip: REASON``   (a comment: Sphinx shows nothing)

tests/docs/test_docs_examples.py skips the marked ones with that reason and lists them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LANGS = ("sh", "python", "toml")
_MD_SKIP = re.compile(r"^<!--\s*example-skip:\s*(.*?)\s*-->\s*$")
_RST_SKIP = re.compile(r"^\.\.\s+example-skip:\s*(.*?)\s*$")
_MD_FENCE = re.compile(r"^```(\w*)\s*$")
_RST_BLOCK = re.compile(r"^(\s*)\.\.\s+code-block::\s*(\w+)\s*$")


@dataclass(frozen=True)
class Example:
    file: str            # relative to the repository
    line: int            # 1-based line of the fence / directive
    lang: str
    code: str
    skip: str | None     # the example-skip reason, or None

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}"


def doc_files() -> list[Path]:
    return [REPO / "README.md"] + sorted((REPO / "docs").rglob("*.rst"))


def _prev_nonblank(lines: list[str], i: int) -> str:
    j = i - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    return lines[j].strip() if j >= 0 else ""


def _markdown(rel: str, lines: list[str]) -> tuple[list[Example], list[int]]:
    out: list[Example] = []
    used: set[int] = set()
    i = 0
    while i < len(lines):
        m = _MD_FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, lang, body = i, m.group(1), []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        i += 1
        if lang in LANGS:
            skip = None
            j = start - 1
            while j >= 0 and not lines[j].strip():
                j -= 1
            if j >= 0 and (s := _MD_SKIP.match(lines[j].strip())):
                skip, _ = s.group(1) or "(no reason given)", used.add(j)
            out.append(Example(rel, start + 1, lang, "\n".join(body) + "\n", skip))
    markers = [k for k, l in enumerate(lines) if _MD_SKIP.match(l.strip()) and k not in used]
    return out, markers


def _rst(rel: str, lines: list[str]) -> tuple[list[Example], list[int]]:
    out: list[Example] = []
    used: set[int] = set()
    for i, line in enumerate(lines):
        m = _RST_BLOCK.match(line)
        if not m or m.group(2) not in LANGS:
            continue
        indent = len(m.group(1))
        j = i + 1
        while j < len(lines) and lines[j].strip().startswith(":") and lines[j].strip():   # options
            j += 1
        body: list[str] = []
        while j < len(lines) and (not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > indent):
            body.append(lines[j])
            j += 1
        while body and not body[-1].strip():
            body.pop()
        while body and not body[0].strip():
            body.pop(0)
        cut = min((len(b) - len(b.lstrip()) for b in body if b.strip()), default=0)
        code = "\n".join(b[cut:] for b in body) + "\n"
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        skip = None
        if k >= 0 and (s := _RST_SKIP.match(lines[k].strip())):
            skip = s.group(1) or "(no reason given)"
            used.add(k)
        out.append(Example(rel, i + 1, m.group(2), code, skip))
    markers = [k for k, l in enumerate(lines) if _RST_SKIP.match(l.strip()) and k not in used]
    return out, markers


def examples() -> list[Example]:
    found: list[Example] = []
    for path in doc_files():
        rel = path.relative_to(REPO).as_posix()
        lines = path.read_text().split("\n")
        found += (_markdown if path.suffix == ".md" else _rst)(rel, lines)[0]
    return found


def dangling_markers() -> list[str]:
    """example-skip markers that do not sit right before an example (a typo would hide nothing)."""
    bad: list[str] = []
    for path in doc_files():
        rel = path.relative_to(REPO).as_posix()
        lines = path.read_text().split("\n")
        bad += [f"{rel}:{k + 1}" for k in (_markdown if path.suffix == ".md" else _rst)(rel, lines)[1]]
    return bad
