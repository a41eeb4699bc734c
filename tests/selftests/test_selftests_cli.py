"""`emukern selftests` command line: listing, and clear errors for bad names (no traceback, no fetch)."""
from __future__ import annotations

from emukern.cli import main


def test_list(capsys):
    assert main(["selftests", "--list", "--arch", "riscv64"]) == 0
    out = capsys.readouterr().out
    assert "riscv64/vector/v_initval_nolibc" in out and "arm64/" not in out


def test_unknown_test_is_a_clear_error(capsys):
    assert main(["selftests", "--only", "no-such-test"]) == 2
    err = capsys.readouterr().err
    assert "no selftest matches" in err and "hint" in err


def test_unknown_kernel_profile(capsys):
    assert main(["selftests", "--only", "sve-test", "--kernel", "5.4"]) == 2
    assert "unknown kernel profile" in capsys.readouterr().err


def test_bad_policy(capsys):
    assert main(["selftests", "--only", "sve-test", "--policy", "arm64-sve=fast"]) == 2
    assert "arm64-sve" in capsys.readouterr().err
