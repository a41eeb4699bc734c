"""fs/exec.c bprm_stack_limits: one implementation (kernel/exec.py) serves execve (-E2BIG) and
the first program's command line (Kernel.load: a clear ConfigError).  Exact boundaries: the
strings (file name, environment, arguments, each with its NUL) may fill the limit minus the
pointer array, whose size counts max(argc, 1)."""
from __future__ import annotations

import pytest

from emukern.errors import ConfigError
from emukern.kernel import kernel as kmod
from emukern.kernel.exec import ARG_MAX, MAX_ARG_STRLEN, ExecError, bprm_stack_limits
from emukern.kernel.fs import E2BIG

STACK = 8 << 20
LIMIT = STACK // 4


def _fill(nargs: int, budget: int) -> list[bytes]:
    """``nargs`` strings whose bytes + NULs add up to exactly ``budget``."""
    base, extra = divmod(budget, nargs)
    return [b"a" * (base - 1 + (i < extra)) for i in range(nargs)]


@pytest.mark.parametrize("nargs", [20, 40])
@pytest.mark.parametrize("over", [0, 1])
def test_total_boundary(nargs: int, over: int) -> None:
    filename, envp = b"/bin/prog", [b"HOME=/"]
    ptrs = (nargs + len(envp)) * 8
    argv = _fill(nargs, LIMIT - ptrs - len(filename) - 1 - len(envp[0]) - 1 + over)
    if over:
        with pytest.raises(ExecError) as ei:
            bprm_stack_limits(argv, envp, STACK, filename)
        assert ei.value.errno == E2BIG and "a quarter of the 8 MiB stack limit" in ei.value.why
        with pytest.raises(ConfigError, match=r"argument list too long \(E2BIG\)"):
            kmod.bprm_stack_limits([a.decode() for a in argv], [e.decode() for e in envp],
                                   filename.decode(), STACK)
    else:
        bprm_stack_limits(argv, envp, STACK, filename)
        kmod.bprm_stack_limits([a.decode() for a in argv], [e.decode() for e in envp], filename.decode(), STACK)


@pytest.mark.parametrize("where", ["argv", "envp", "filename"])
def test_one_string_over_max_arg_strlen(where: str) -> None:
    big, ok = b"x" * MAX_ARG_STRLEN, b"x" * (MAX_ARG_STRLEN - 1)       # NUL makes it 1 over / exact
    parts = {"argv": [b"p"], "envp": [], "filename": b"/p"}
    bprm_stack_limits(*([ok] if where == "argv" else parts["argv"],
                        [ok] if where == "envp" else parts["envp"]), STACK,
                      ok if where == "filename" else parts["filename"])
    with pytest.raises(ExecError, match="MAX_ARG_STRLEN"):
        bprm_stack_limits([big] if where == "argv" else parts["argv"],
                          [big] if where == "envp" else parts["envp"], STACK,
                          big if where == "filename" else parts["filename"])


def test_small_rlimit_keeps_the_arg_max_floor() -> None:
    bprm_stack_limits(_fill(4, ARG_MAX - 4 * 8 - 3), [], 64 << 10, b"/p")
    with pytest.raises(ExecError, match="ARG_MAX"):
        bprm_stack_limits(_fill(4, ARG_MAX - 4 * 8 - 2), [], 64 << 10, b"/p")


def test_empty_argv_still_counts_one_pointer() -> None:
    with pytest.raises(ExecError, match="pointers"):
        bprm_stack_limits([], [b""] * (ARG_MAX // 8 - 1), 0, b"")
