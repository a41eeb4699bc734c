"""Every repository path the docs cite exists.

Scans README.md and docs/**/*.rst for anything that looks like ``emukern/...``, ``tests/...``,
``tools/...``, ``guest_asm/...`` or ``docs/...`` (brace lists such as ``{a,b}_probe.c`` are
expanded, ``*`` is a glob; placeholders with ``<...>`` are ignored) and checks it against the
checkout.
"""
from __future__ import annotations

import itertools
import re

from docs_extract import REPO, doc_files

# Paths of the kernel's target layout (docs/dev/architecture.rst, docs/dev/extending.rst) that
# the docs describe before the reshape lands.  The lead empties this list after merging the
# reshape: from then on every one of these must exist, like any other cited path.
PENDING_RESHAPE_PATHS: set[str] = set()     # the reshaped layout has landed: every path must exist
# Cited on purpose although they are not files of the checkout (prefixes).
NOT_IN_CHECKOUT = (
    "docs/_build",              # sphinx-build's output directory
    "emukern/_guest_asm",       # guest_asm/ as package data inside the wheel
    "tools/testing/selftests/",  # paths in Linux's source tree (docs/guide/selftests.rst)
    "tools/include",             # Linux's tools/include (nolibc)
)

_PATH = re.compile(r"(?<![\w./~-])((?:emukern|tests|tools|guest_asm|docs)/[\w./{},*+<>…-]*)")


def _expand(path: str) -> list[str]:
    m = re.search(r"\{([^{}]*)\}", path)
    if not m:
        return [path]
    return list(itertools.chain.from_iterable(
        _expand(path[:m.start()] + alt + path[m.end():]) for alt in m.group(1).split(",")))


def cited_paths() -> dict[str, list[str]]:
    """path -> where it is cited (file:line)."""
    found: dict[str, list[str]] = {}
    for f in doc_files():
        rel = f.relative_to(REPO).as_posix()
        for n, line in enumerate(f.read_text().splitlines(), 1):
            for m in _PATH.finditer(line):
                raw = m.group(1).rstrip(".,;:)")
                if "<" in raw or ">" in raw or "…" in raw or raw.endswith("/...") or raw.endswith("-"):
                    continue
                for p in _expand(raw):
                    found.setdefault(p, []).append(f"{rel}:{n}")
    return found


def _exists(path: str) -> bool:
    if any(ch in path for ch in "*?["):
        return any(REPO.glob(path))
    return (REPO / path).exists()


def test_cited_paths_exist() -> None:
    cited = cited_paths()
    assert len(cited) > 30, sorted(cited)      # the scan finds what the docs cite
    missing = {p: where for p, where in cited.items()
               if p not in PENDING_RESHAPE_PATHS and not p.startswith(NOT_IN_CHECKOUT) and not _exists(p)}
    assert not missing, "docs cite paths that do not exist:\n" + "\n".join(
        f"  {p}  ({', '.join(w[:3])})" for p, w in sorted(missing.items()))


def test_pending_reshape_paths_are_still_cited() -> None:
    """A pending path the docs no longer cite should leave the allow-list."""
    cited = cited_paths()
    stale = sorted(p for p in PENDING_RESHAPE_PATHS if p not in cited)
    assert not stale, f"PENDING_RESHAPE_PATHS entries no longer cited by the docs: {stale}"


def test_pending_reshape_paths_report() -> None:
    """Lists which pending paths already exist (the lead can drop them from the list)."""
    landed = sorted(p for p in PENDING_RESHAPE_PATHS if _exists(p))
    print(f"\nPENDING_RESHAPE_PATHS that exist now: {landed}")
