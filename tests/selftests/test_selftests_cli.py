"""`emukern selftests` command line: listing, and clear errors for bad names (no traceback, no fetch)."""
from __future__ import annotations

import pytest

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


@pytest.mark.parametrize("argv, needle", [
    (["--arch", "arm64", "--vl", "100"], "--vl 100 is not an SVE vector length"),
    (["--vl", "64"], "--vl 64 is not an SVE vector length"),            # both arches selected
    (["--arch", "riscv64", "--vl", "384"], "--vl 384 is not an RVV VLEN"),
    (["--arch", "arm64", "--vl", "256", "--vl", "4096"], "--vl 4096 is not an SVE vector length"),
])
def test_selftests_bad_vl_is_one_error_before_any_run(argv: list[str], needle: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """A --vl no machine of the selected arch can have is refused once, up front (exit 2), not
    reported as a failure of every run of every vector test."""
    from emukern.cli import main
    rc = main(["selftests", *argv])
    err = capsys.readouterr().err
    assert rc == 2 and needle in err and "Traceback" not in err, err
    assert "selftests:" not in err          # nothing was fetched, built or run


def test_selftests_vl_valid_for_its_arch_passes_the_check() -> None:
    from emukern.selftests.suite import check_vls
    check_vls((64, 4096), {"riscv64"})
    check_vls((384, 2048), {"arm64"})
    check_vls((128, 256), {"arm64", "riscv64"})
