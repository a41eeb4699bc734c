"""The fp-pidbench floor (emukern/bench/raw_pidbench.py): the same getpid calls and SVE access
traps as emukern's run of the same ELF, so a ratio against it compares like with like; and the
bench's figure of getpid + SVE trap pairs (Linux 6.1's model) carries it."""
from __future__ import annotations

import pytest

from emukern.api import Machine
from emukern.bench import selfbench as S
from emukern.bench.raw_pidbench import raw_pidbench_us

ARGV = ["10", "2"]          # fp_pidbench.S: 10 iterations x 2 blocks per loop, four loops


@pytest.mark.parametrize("kernel, discard", [(None, False), (S.TRAP_PAIR_KERNEL, True)])
def test_floor_takes_the_traps_emukern_takes(kernel, discard):
    elf = S._elf("arm64", "fp_pidbench")
    m = Machine(arch="arm64", max_insns=None, **({"kernel": kernel} if kernel else {}))
    r = m.load(elf, ARGV).run()
    us, getpids, traps, out = raw_pidbench_us(elf, ARGV, discard=discard)
    assert us > 0 and out
    assert getpids == r.syscalls["getpid"] == 4 * 10 * 2
    assert traps == r.traps["sve-access"]
    # the newest model flushes instead of trapping again; 6.1 traps once per SVE block after a
    # syscall: more than once
    assert (traps == 1) is (not discard)


def test_bench_prints_the_floor_beside_fp_pidbench(monkeypatch):
    import emukern.selftests.pidbench as P
    monkeypatch.setattr(P, "build", lambda full=False, fetch=True: (None, "no Linux source in the cache", 0))
    monkeypatch.setattr(S.peers, "qemu_wall", lambda *a, **k: (_ for _ in ()).throw(S.Unavailable("not installed")))
    figs = {f["key"]: f for f in S.m_pidbench(S.Settings(reps=2, sizes=S.Sizes(pid_iters=10, pid_blocks=2)))}
    own = figs["arm64.pidbench"]["contenders"]
    assert own[S.EK]["n"] == own[S.RAW_PID]["n"] == 2 and own[S.RAW_PID]["ratio"]["n"] == 2
    pair = figs["arm64.pidbench.trap_pair"]
    assert pair["kernel"] == S.TRAP_PAIR_KERNEL and pair["target"] is None and pair["met"] is None
    assert pair["contenders"][S.EK]["n"] == pair["contenders"][S.RAW_PID]["n"] == 2
    assert pair["sve_traps"][S.EK] == pair["sve_traps"][S.RAW_PID] > 1
    assert pair["getpid_calls"] == 4 * 10 * 2
