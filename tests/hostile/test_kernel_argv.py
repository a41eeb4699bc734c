"""Issue 11 item 9: big command lines.  Linux lets the argument and environment strings use a
quarter of the stack limit (2 MiB) and each string up to MAX_ARG_STRLEN (128 KiB); emukern used
to fault writing anything past its first 128 KiB of stack (an internal error, rc 70)."""
from __future__ import annotations

import pytest

from emukern.api import Machine
from emukern.cli import main
from emukern.errors import ConfigError

MAX_ARG_STRLEN = 32 * 4096   # Linux: one string, NUL included

ARCHES = ("riscv64", "arm64")


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("nargs,size", [(200, 1000), (1900, 1000), (1, MAX_ARG_STRLEN - 1)])
def test_big_argv_reaches_the_guest(cprog, arch, nargs, size):
    m = Machine()
    m.load(cprog("argv_sum", arch), ["x" * size] * nargs)
    r = m.run()
    assert r.exit_status == 0, r.message
    assert r.stdout == f"argc={nargs + 1} total={nargs * size}\n".encode()


@pytest.mark.parametrize("argv,what", [(["y" * 1000] * 2200, "a quarter of the 8 MiB stack"),
                                       (["z" * MAX_ARG_STRLEN], "MAX_ARG_STRLEN")])
def test_past_linux_limits_is_e2big(cprog, argv, what):
    with pytest.raises(ConfigError, match=f"E2BIG.*{what}"):
        Machine().load(cprog("argv_sum", "riscv64"), argv)


def test_cli(cprog, capsys):
    exe = str(cprog("argv_sum", "riscv64"))
    assert main(["run", "-q", exe, *(["w" * 1000] * 200)]) == 0      # was rc 70
    assert capsys.readouterr().out == "argc=201 total=200000\n"
    assert main(["run", "-q", exe, *(["w" * 1000] * 2200)]) == 2
    err = capsys.readouterr().err
    assert "argument list too long (E2BIG)" in err and "internal error" not in err
