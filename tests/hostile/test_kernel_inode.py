"""Issue 11 item 11: every value a guest reads comes from the model — pipe inode numbers are
pipefs's get_next_ino sequence, not bits of a host address (id()), so runs repeat exactly."""
from __future__ import annotations

import pytest

from emukern.api import Machine
from emukern.kernel.fs import namei as fs_namei

ARCHES = ("riscv64", "arm64")


@pytest.mark.parametrize("arch", ARCHES)
def test_pipe_inode_numbers_come_from_the_model(cprog, arch):
    outs = []
    for _ in range(2):
        m = Machine()
        m.load(cprog("pipe_ino", arch))
        r = m.run()
        assert r.exit_status == 0
        outs.append(r.stdout)
    # both ends of a pipe share its inode; new pipes take the next number of the CPU's batch
    assert outs[0] == (b"pipe 0: ino 1 1 fifo=1\npipe 1: ino 2 2 fifo=1\npipe 2: ino 3 3 fifo=1\n")
    assert outs[1] == outs[0]


def test_get_next_ino_batches_per_cpu():
    from emukern.config import MachineConfig
    from emukern.kernel.kernel import LAST_INO_BATCH, Kernel
    k = Kernel(MachineConfig(cpus=2))
    c0, c1 = k.cpus
    assert [fs_namei.get_next_ino(k, c0) for _ in range(3)] == [1, 2, 3]
    assert fs_namei.get_next_ino(k, c1) == LAST_INO_BATCH + 1       # CPU 1 took the next batch
    for _ in range(LAST_INO_BATCH - 3):
        fs_namei.get_next_ino(k, c0)
    assert fs_namei.get_next_ino(k, c0) == 2 * LAST_INO_BATCH + 1   # CPU 0's batch ran out: a new one
