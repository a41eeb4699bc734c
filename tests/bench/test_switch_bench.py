"""emukern bench's switch figures (issue 30): the rows exist with both contenders, tiny counts,
never a timed assertion."""
from __future__ import annotations

from emukern.bench import selfbench as S
from emukern.bench import switch as S_SWITCH
from tests.bench.quick_figures import quick_figures


def test_switch_rows_quick() -> None:
    figs = quick_figures("switch")
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

