"""The Python API users import: emukern.api.Machine / run_program and their options."""
from __future__ import annotations

import pytest

import emukern
from emukern.api import Machine, run_program
from emukern.errors import ConfigError

KEY = "abi.riscv_v_vstate_discard"


@pytest.mark.parametrize("value,expect", [(1, 1), (0, 0), (True, 1), (False, 0), ("1", 1), ("0", 0)])
def test_sysctls_accept_ints_bools_and_strings(guest_asm, value, expect):
    m = Machine(sysctls={KEY: value}).load(guest_asm / "riscv" / "hello.S")
    assert m.kernel is not None and m.kernel.sysctl.get(KEY) == expect
    assert m.run().exit_status == 0


@pytest.mark.parametrize("value", [1.0, None, [1], b"1"])
def test_sysctls_reject_other_types_naming_the_option(guest_asm, value):
    with pytest.raises(ConfigError) as exc:
        run_program(guest_asm / "riscv" / "hello.S", sysctls={KEY: value})
    assert KEY in exc.value.message


def test_sysctls_bad_text_is_the_kernels_einval(guest_asm):
    with pytest.raises(ConfigError) as exc:
        run_program(guest_asm / "riscv" / "hello.S", sysctls={KEY: "on"})
    assert KEY in exc.value.message and "invalid value" in exc.value.message


def test_unknown_option_is_a_config_error():
    with pytest.raises(ConfigError) as exc:
        Machine(vlenn=512)
    assert "vlenn" in exc.value.message


def test_version_attribute():
    assert isinstance(emukern.__version__, str) and emukern.__version__[0].isdigit()


def test_run_program_returns_the_result(guest_asm):
    r = run_program(guest_asm / "arm64" / "hello.S")
    assert r.exit_status == 0 and r.stdout == b"Hello from AArch64 EL0!\n"


def test_inspection_before_load_is_a_config_error():
    m = Machine()
    for call in (lambda: m.cpu(0), lambda: m.read(0, 4), lambda: m.symbol("_start"), lambda: m.trap_log, m.run):
        with pytest.raises(ConfigError):
            call()
