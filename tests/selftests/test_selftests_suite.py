"""`emukern selftests --suite`: vector (today's set, the default), generic, all."""
from __future__ import annotations

from emukern.cli import main
from emukern.selftests.catalog import GENERIC, NOT_RUN_GENERIC, TESTS, select
from emukern.selftests.expected import ExpectedTable


def test_default_suite_is_exactly_the_vector_set() -> None:
    assert [t.id for t in select()] == [t.id for t in TESTS]
    assert [t.id for t in select(suite="vector")] == [t.id for t in TESTS]
    assert not any(t.generic for t in TESTS)


def test_generic_suite_runs_every_program_on_both_arches() -> None:
    gen = select(suite="generic")
    assert gen and all(t.generic for t in gen)
    for t in gen:
        other = "riscv64" if t.arch == "arm64" else "arm64"
        assert f"{other}/{t.dir}/{t.name}" in {g.id for g in gen}
    assert [t.id for t in select(suite="all")] == [t.id for t in [*TESTS, *GENERIC]]


def test_generic_tests_build_from_the_shared_directories() -> None:
    t = select("arm64", ["futex_wait_timeout"], "generic")[0]
    assert t.srcdir == "futex/functional" and t.id == "arm64/futex/functional/futex_wait_timeout"
    v = select("arm64", ["sve-test"])[0]
    assert v.srcdir == "arm64/fp"


def test_every_generic_test_has_an_expectation_with_a_reason() -> None:
    table = ExpectedTable.load()
    for t in GENERIC:
        exp = table.lookup(t.id, {}, None)
        assert exp is not None, t.id
        if exp.verdict != "pass":
            assert len(exp.reason) > 20, t.id


def test_not_run_reasons_are_given() -> None:
    assert NOT_RUN_GENERIC and all(len(why) > 20 for why in NOT_RUN_GENERIC.values())


def test_list_generic(capsys) -> None:
    assert main(["selftests", "--suite", "generic", "--list", "--arch", "riscv64"]) == 0
    out = capsys.readouterr().out
    assert "riscv64/futex/functional/futex_wait_timeout" in out and "v_initval" not in out
    assert "arm64/" not in out


def test_list_default_has_no_generic_tests(capsys) -> None:
    assert main(["selftests", "--list"]) == 0
    out = capsys.readouterr().out
    assert "sve-test" in out and "futex" not in out


def test_generic_name_without_suite_is_a_clear_error(capsys) -> None:
    assert main(["selftests", "--only", "futex_wait_timeout"]) == 2
    err = capsys.readouterr().err
    assert "--suite generic" in err and "Traceback" not in err
