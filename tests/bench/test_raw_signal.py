"""emukern.bench.raw_signal, the raw-Unicorn floor under the signal round-trip figure: it runs
sig_loop.S to its end, delivering and returning from every signal, in a bare Unicorn."""
from __future__ import annotations

import pytest

from emukern.bench.raw_signal import raw_signal_us
from emukern.bench.selfbench import _elf


@pytest.mark.parametrize("arch", ["riscv64", "arm64"])
@pytest.mark.parametrize("n", [1, 37])
def test_raw_signal_loop_delivers_every_signal(arch: str, n: int) -> None:
    st: dict[str, int] = {}
    us = raw_signal_us(arch, _elf(arch, "sig_loop"), n, st)
    assert us > 0
    # the handler ran and came back through the trampoline n times, then the loop exited 0 (a
    # frame restored wrongly would lose the loop counter or the return address: no clean exit)
    assert (st["delivered"], st["returned"], st["exit_status"]) == (n, n, 0)
    assert st["handler"] != 0


@pytest.mark.parametrize("arch", ["riscv64", "arm64"])
def test_raw_signal_loop_with_a_ctypes_hook(arch: str) -> None:
    from emukern.bench.selfbench import raw_syscall_us
    st: dict[str, int] = {}
    assert raw_signal_us(arch, _elf(arch, "sig_loop"), 25, st, direct=True) > 0
    assert (st["delivered"], st["returned"], st["exit_status"]) == (25, 25, 0)
    assert raw_syscall_us(arch, 50, direct=True) > 0 and raw_syscall_us(arch, 50) > 0
