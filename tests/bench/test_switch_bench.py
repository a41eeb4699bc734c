"""emukern bench's switch figures (issue 30): the rows exist with both contenders, tiny counts,
never a timed assertion."""
from __future__ import annotations

import shutil

import pytest

from emukern.bench import selfbench as S
from emukern.bench import switch as S_SWITCH


def test_switch_rows_quick() -> None:
    if shutil.which("aarch64-linux-gnu-gcc") is None or shutil.which("riscv64-linux-gnu-gcc") is None:
        pytest.skip("the Debian cross compilers are not installed")
    res = S.measure(quick=True, reps=1, only=["switch"])
    figs = {f["key"]: f for f in res["figures"]}
    for arch in S.ARCHES:
        for key in ("switch_proc", "switch_thread", "fork"):
            f = figs[f"{arch}.{key}"]
            assert f["unit"] == "µs"
            assert f["contenders"]["emukern"]["n"] == 1
            assert "qemu-user" in f["contenders"]
            # qemu-user runs each loop more often than emukern (its round trip is the host
            # kernel's: at emukern's counts the difference of its two runs is start-up noise)
            n1, n2 = f["iterations"]
            q1, q2 = f["qemu_iterations"]
            scale = S_SWITCH.QEMU_SCALE_FORK if key == "fork" else S_SWITCH.QEMU_SCALE_RT
            assert (q1, q2) == (n1 * scale, n2 * scale) and scale > 1
    for arch in S.ARCHES:
        f = figs[f"{arch}.switch_floor"]
        assert f["qemu_iterations"] == [n * S_SWITCH.QEMU_SCALE_RT for n in f["iterations"]]


def test_switch_python_work_is_exact() -> None:
    """The bytecode counts are the same run to run (sys.settrace events, not a time), and a round
    trip between processes runs more Python than one between threads (switch_mm's engine choice)."""
    if shutil.which("riscv64-linux-gnu-gcc") is None:
        pytest.skip("the Debian cross compiler is not installed")
    a = S_SWITCH.python_work("riscv64", ["t", "3"])
    b = S_SWITCH.python_work("riscv64", ["t", "3"])
    c = S_SWITCH.python_work("riscv64", ["t", "6"])
    assert a == b
    assert c[0] > a[0] and c[1] > a[1]
    p3, p6 = S_SWITCH.python_work("riscv64", ["p", "3"]), S_SWITCH.python_work("riscv64", ["p", "6"])
    assert (p6[0] - p3[0]) > (c[0] - a[0])
