"""--max-insns: a default no real program hits by accident (2e10 user instructions), none when
another bound is given, 0 for none; a runaway still stops."""
from __future__ import annotations

import pytest

from emukern.cli import make_parser
from emukern.options import DEFAULT_MAX_INSNS, config_from_args


def _cfg(argv: list[str]):
    a = make_parser().parse_args(["run", "prog.S", *argv])
    return config_from_args(a)


@pytest.mark.parametrize("argv, expected", [
    ([], DEFAULT_MAX_INSNS),
    (["--max-insns", "0"], None),
    (["--max-insns", "1000"], 1000),
    (["--host-timeout", "5"], None),
    (["--timeout", "0.5"], None),
    (["--max-cycles", "1000000"], None),
    (["--timeout", "0.5", "--max-insns", "77"], 77),
])
def test_max_insns_default(argv: list[str], expected: int | None) -> None:
    assert _cfg(argv).max_insns == expected


def test_the_default_is_far_above_a_real_program() -> None:
    assert DEFAULT_MAX_INSNS >= 7 * 2_650_000_000          # xz -6 on 3 MB: 2.65e9 instructions
