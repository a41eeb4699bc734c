"""switch_mm between two processes keeps each one's scanned code (cpu_base: each address space
keeps its engine; with ENGINES_PER_MM off, _leave_mm parks the scan state and _unpark restores
it): the code pages are scanned once, not once per switch, and the run's results (output,
instruction counts, cycles) do not depend on it."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from emukern.api import Machine

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from cguests import build_cguest  # noqa: E402


def _run(exe: Path, arch: str, mode: str, n: int, *, park: bool = True) -> tuple[bytes, str, int]:
    m = Machine(arch=arch).load(exe, [mode, str(n)])
    cpu = m.cpu(0)
    if not park:
        cpu.ENGINES_PER_MM = False             # (one engine, remapped on every switch)
        cpu.PARKED_MMS = 0                     # (the instance attribute: nothing stays parked)
        cpu.SCAN_MEMO_PAGES = 1                # (every scan decodes again)
    r = m.run()
    # every recorded figure of the run (the --json document) and the scans it took
    return r.stdout, json.dumps(r.to_json(), sort_keys=True, default=str), cpu.code_scans


@pytest.mark.parametrize("arch", ["riscv64", "arm64"])
def test_pipe_round_trips_scan_once(arch: str) -> None:
    exe = build_cguest("pipe_pingpong", arch, "-lpthread")
    out10, *_, scans10 = _run(exe, arch, "p", 10)
    out60, *_, scans60 = _run(exe, arch, "p", 60)
    assert out10 == b"round trips 10\n" and out60 == b"round trips 60\n"
    assert scans60 == scans10          # 100 more switches, no more scans


@pytest.mark.parametrize("arch", ["riscv64", "arm64"])
@pytest.mark.parametrize("mode", ["p", "f"])
def test_parking_changes_no_figure(arch: str, mode: str) -> None:
    exe = build_cguest("pipe_pingpong", arch, "-lpthread")
    fast = _run(exe, arch, mode, 12)
    assert fast[0] == (b"forks 12\n" if mode == "f" else b"round trips 12\n")
    slow = _run(exe, arch, mode, 12, park=False)
    assert fast[:2] == slow[:2]
    assert fast[2] < slow[2]
