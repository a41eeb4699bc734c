"""`--only` means the same on reproduce, bench and selftests (emukern/cli/only.py): comma lists
and repeats, the valid names in --help, an unknown name refused up front as `emukern: error:`
with the valid names."""
from __future__ import annotations

import pytest

from emukern.cli import main
from emukern.cli.bench import EXPERIMENT_NAMES, MEASUREMENT_NAMES
from emukern.cli.only import parse_only


def test_the_names_in_help_are_the_real_ones():
    from emukern.bench.reproduce import EXPERIMENTS
    from emukern.bench.selfbench import MEASUREMENTS
    assert list(EXPERIMENT_NAMES) == list(EXPERIMENTS)
    assert list(MEASUREMENT_NAMES) == [m.name for m in MEASUREMENTS]


def test_comma_lists_and_repeats_merge_in_order():
    assert parse_only(["a,b", "c", "b, a"], ["a", "b", "c"], "x", "cmd") == ["a", "b", "c"]
    assert parse_only([], ["a"], "x", "cmd") == []


@pytest.mark.parametrize("command, valid", [("reproduce", EXPERIMENT_NAMES), ("bench", MEASUREMENT_NAMES),
                                            ("selftests", ("sve-test", "hwprobe", "sigreturn"))])
def test_help_lists_the_valid_names(command, valid, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split()).replace("- ", "-")
    assert "comma-separated list, repeatable" in text
    for name in valid:
        assert name in text, (command, name)


def test_bench_help_lists_signal(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    assert "signal" in capsys.readouterr().out.split("--only", 1)[1]


@pytest.mark.parametrize("command, good", [("reproduce", "kernel_core"), ("bench", "mips"), ("selftests", "sve-test")])
def test_unknown_name_is_an_error_naming_the_valid_ones(command, good, capsys):
    rc = main([command, "--only", f"{good},no-such-thing", "--only", good])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("emukern: error:") and "no-such-thing" in err
    assert "valid names:" in err and good in err.split("valid names:")[1]


def test_selftests_only_takes_lists_and_long_forms(capsys):
    assert main(["selftests", "--list", "--only", "sve-test,fp/vlset", "--only", "riscv64/hwprobe/hwprobe"]) == 0
    ids = [line.split()[0] for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert ids == ["arm64/fp/vlset", "arm64/fp/sve-test", "riscv64/hwprobe/hwprobe"]
