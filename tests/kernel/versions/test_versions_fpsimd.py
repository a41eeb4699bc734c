"""Per --kernel, the arm64 syscall-entry treatment of SVE state (kernel/versions.py fpsimd_syscall).

guest_asm/arm64/sve_syscall.S uses SVE, makes a syscall and uses SVE again.  What the task sees is
the same in every release (Documentation/arch/arm64/sve.rst: after a syscall Z above 128 bits,
P and FFR read zero), but the way there differs:

* Linux 6.1 clears TIF_SVE at every syscall (before Mark Brown's "arm64/sve: Leave SVE enabled on
  syscall if we don't context switch", 6.2): the second SVE use traps again (2 SVE access traps);
* 6.12 and 7.3 keep TIF_SVE and flush at syscall entry: one trap, one flush per syscall.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from emukern.api import Machine

ROOT = Path(__file__).resolve().parents[3]
SVE_SYSCALL = ROOT / "guest_asm/arm64/sve_syscall.S"


def _run(kernel: str) -> tuple[bytes, dict[str, int], dict[str, int]]:
    m = Machine(arch="arm64", kernel=kernel)
    r = m.load(SVE_SYSCALL).run()
    assert r.exit_status == 0, r.message
    assert not r.warnings
    return r.stdout, r.traps, dict(m.kernel.sve_stats)


@pytest.mark.parametrize("kernel, traps, dropped_at_syscall", [
    ("debian-12-arm64", 2, 2),         # getpid and write each follow an SVE use: both drop TIF_SVE
    ("debian-13-arm64", 1, 0),
    ("linux-7.3-arm64", 1, 0),
])
def test_syscall_entry_variant(kernel: str, traps: int, dropped_at_syscall: int) -> None:
    out, tr, stats = _run(kernel)
    assert tr.get("sve-access", 0) == traps
    assert stats.get("drop_tif_sve_syscall", 0) == dropped_at_syscall
    if dropped_at_syscall == 0:
        assert stats.get("flush_syscall", 0) >= 1


def test_every_release_gives_the_task_the_same_registers() -> None:
    outs = {k: _run(k)[0] for k in ("debian-12-arm64", "debian-13-arm64", "linux-7.3-arm64+changes")}
    assert len(set(outs.values())) == 1
    before, after = outs["debian-12-arm64"][:4096], outs["debian-12-arm64"][4096:]
    assert before != after                      # the syscall did zero something (Z above 128, P, FFR)
