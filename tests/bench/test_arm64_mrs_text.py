"""arm64_mrs: the constants it prints are the ones its figures move with; its "where we differ"
sentences are formatted from the sweep."""
from __future__ import annotations

import pytest

from emukern.bench import arm64_mrs as bench
from emukern.kernel.cost import DEFAULT_COSTS


@pytest.fixture(scope="module")
def base():
    return {p: bench.run_one(p, 2, 60) for p in bench.POLICIES}


@pytest.mark.parametrize("key", bench.COST_KEYS)
def test_every_printed_constant_moves_a_figure(base, key):
    # change the constant: the hook-list run's kernel cycles move (and the direct run's too,
    # unless the key is only on the undef_lock / hook-list path)
    lock_only = key in ("undef_hook_compare", "spin_lock", "spin_unlock", "cacheline_transfer", "spin_poll")
    res = {p: bench.run_one(p, 2, 60, costs={key: DEFAULT_COSTS[key][0] * 3 + 7}) for p in bench.POLICIES}
    assert res["hook-list"]["sys_cycles"] != base["hook-list"]["sys_cycles"]
    assert (res["direct"]["sys_cycles"] == base["direct"]["sys_cycles"]) == lock_only


def test_an_unlisted_constant_does_not(base):
    res = bench.run_one("hook-list", 2, 60, costs={"pipe_op": 999})
    assert res["sys_cycles"] == base["hook-list"]["sys_cycles"]


def _row(policy, n, real, sys_cycles, traps, contended, acq, spin):
    return {"policy": policy, "threads": n, "real_s": real, "sys_cycles": sys_cycles, "mrs_traps": traps,
            "lock": {"contended": contended, "acquisitions": acq, "spin_cycles": spin}}


def test_differences_are_formatted_from_the_results():
    res = {("hook-list", 1): _row("hook-list", 1, 1.0, 100, 10, 0, 10, 0),
           ("hook-list", 64): _row("hook-list", 64, 300.0, 64_000, 640, 600, 640, 64_000),
           ("direct", 1): _row("direct", 1, 1.0, 50, 10, 0, 0, 0),
           ("direct", 64): _row("direct", 64, 1.25, 3_200, 640, 0, 0, 0)}
    text = "\n".join(bench.differences(res, 1000))
    pub_b = bench.SEED_REAL["hook-list"][64] / bench.SEED_REAL["hook-list"][1]
    assert f"grows 300.0x from 1 to 64 threads here, {pub_b:.1f}x published" in text
    assert "600 of 640 acquisitions contended, 100 spin cycles per acquisition" in text
    # ours grew more than published: the text must not claim the model explains a larger published growth
    assert "would explain the larger published growth" not in text
    assert "After the rework, 1.25x here" in text and "(0 undef_lock acquisitions)" in text
    assert "100 kernel cycles per emulated MRS at N=64" in text and "K=1,000" in text
