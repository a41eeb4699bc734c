"""Signal-heavy runs give the JSON summary and the frame bytes recorded in
data/signal_golden.json (before the signal round trip was made faster): the fast paths build
the same frames, restore the same state and charge the same cycles.  An intended change of
behaviour re-records with ``python -m tests.kernel.signal.signal_golden --update``."""
from __future__ import annotations

import json

import pytest

from signal_golden import CASES, DATA, record

GOLDEN = json.loads(DATA.read_text())


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("golden")


@pytest.mark.parametrize("name", sorted(CASES))
def test_run_matches_the_golden_record(name, build_dir):
    got = record(name, build_dir)
    if got is None:
        pytest.skip("the cross compiler is not installed")
    want = GOLDEN[name]
    assert got["exit_status"] == want["exit_status"]
    assert got["n_frames"] == want["n_frames"]
    assert got["frames"] == want["frames"], f"{name}: the signal frames' bytes changed"
    assert len(got["insns"]) == len(want["insns"])
    assert all(g <= w for g, w in zip(got["insns"], want["insns"]))
    assert got["json"] == want["json"], (f"{name}: the run's JSON summary changed (re-record with "
                                         f"python -m tests.kernel.signal.signal_golden --update "
                                         f"only if the change is intended)")


def test_every_case_is_recorded():
    assert set(GOLDEN) == set(CASES)
