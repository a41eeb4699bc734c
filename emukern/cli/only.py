"""`--only` means the same on every command that has it (reproduce, bench, selftests): a name or a
comma-separated list, repeatable (``--only a,b --only c``), the valid names in the command's
--help, and an unknown name refused before anything runs, as ``emukern: error:`` with the valid
names (a ConfigError, which main() prints)."""
from __future__ import annotations

from typing import Callable, Sequence

from emukern.errors import ConfigError


def only_help(what: str, valid: Sequence[str], extra: str = "") -> str:
    """The help text of an --only option listing ``valid``."""
    return (f"run only these {what}s: a name or a comma-separated list, repeatable{extra}. "
            f"Valid: " + ", ".join(valid))


def parse_only(values: Sequence[str], valid: Sequence[str], what: str, command: str,
               known: Callable[[str], bool] | None = None) -> list[str]:
    """The names ``--only`` gave (comma lists split, repeats merged, first-seen order), each
    checked with ``known`` (default: one of ``valid``); an unknown one is a ConfigError naming
    the valid ones."""
    names: list[str] = []
    for item in values:
        for n in item.split(","):
            n = n.strip()
            if n and n not in names:
                names.append(n)
    ok = known or (lambda n: n in valid)
    unknown = [n for n in names if not ok(n)]
    if unknown:
        raise ConfigError(f"{command} --only {', '.join(unknown)}: no {what} matches "
                          + ("it" if len(unknown) == 1 else "them"),
                          hint=f"valid names: {', '.join(valid)}")
    return names
