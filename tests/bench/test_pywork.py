"""emukern bench's Python-work rows: counts of bytecodes and calls, which must repeat run to run
and grow with the work, and the group's rows."""
from __future__ import annotations

import pytest

from emukern.bench import pywork
from emukern.bench import selfbench as S
from tests.bench.quick_figures import quick_figures


def _syscall_loop(arch: str, n: int) -> pywork.Any:
    return lambda: pywork._asm_machine(arch, "syscall_loop", [str(n)])


@pytest.mark.parametrize("arch", ["riscv64", "arm64"])
def test_counts_repeat_and_grow(arch: str) -> None:
    _syscall_loop(arch, 5)().run()                  # the one-time work out of the way
    a = pywork.count_python(_syscall_loop(arch, 50))
    b = pywork.count_python(_syscall_loop(arch, 50))
    c = pywork.count_python(_syscall_loop(arch, 100))
    assert a[:2] == b[:2]
    assert c[0] > a[0] and c[1] > a[1]
    # a getppid is a few hundred bytecodes: the hook, the entry, the handler, the exit, the record
    per = (c[0] - a[0]) / 50
    assert 100 < per < 5000


def test_per_operation_uses_the_operation_count() -> None:
    """fp-pidbench makes 4 getpid per iteration: per getpid, not per argument step."""
    by_arg = pywork.per_operation(lambda n: lambda: pywork._asm_machine("arm64", "fp_pidbench", [str(n), "1"]), 10, 30)
    by_getpid = pywork.per_operation(lambda n: lambda: pywork._asm_machine("arm64", "fp_pidbench", [str(n), "1"]),
                                     10, 30, ops_of=lambda r: r.syscalls.get("getpid", 0))
    assert by_arg[0] == pytest.approx(4 * by_getpid[0], rel=0.05)


def test_a_failing_guest_is_an_error_not_a_count() -> None:
    from emukern.api import Machine
    from emukern.bench.selfbench import _elf

    def make() -> pywork.Any:
        # stopped by its instruction budget (exit status 124): no count may come of that run
        m = Machine(arch="riscv64", max_insns=1000)
        m.load(_elf("riscv64", "syscall_loop"), ["100000"])
        return m
    with pytest.raises(RuntimeError, match="exited with"):
        pywork.count_python(make)


def test_pywork_rows_quick() -> None:
    figs = quick_figures("pywork")
    for arch in S.ARCHES:
        for kind in ("syscall", "signal", "switch_thread", "switch_proc"):
            f = figs[f"{arch}.pywork.{kind}"]
            assert f["unit"] == "bytecodes" and f["contenders"]["emukern"]["n"] == 1
            assert f["calls"] > 0
        thread = figs[f"{arch}.pywork.switch_thread"]
        assert thread["bytecodes_40us_allows"] > 0
        # between processes a round trip also switches address spaces: more work than threads
        assert figs[f"{arch}.pywork.switch_proc"]["contenders"]["emukern"]["median"] > \
            thread["contenders"]["emukern"]["median"]
    assert figs["arm64.pywork.pidbench"]["contenders"]["emukern"]["n"] == 1
