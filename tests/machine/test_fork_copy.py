"""AddressSpace.fork copies what the parent holds, byte for byte, reading only the pages the
host gave the parent's buffers (memory._touched_runs); MAP_SHARED stays one buffer."""
from __future__ import annotations

import random

from emukern.machine import memory
from emukern.machine.memory import PAGE, SHARED_ANON, AddressSpace, MemoryPool


def _filled() -> AddressSpace:
    mm = AddressSpace(pool=MemoryPool())
    mm.map(0x10000, 64 * PAGE, "rw-", "heap")
    mm.map(0x100000, 3 * (1 << 20), "rw-", "[stack]")
    mm.map(0x800000, 4 * PAGE, "rw-", SHARED_ANON)
    rnd = random.Random(7)
    for _ in range(200):
        base, size = rnd.choice([(0x10000, 64 * PAGE), (0x100000, 3 << 20)])
        off = rnd.randrange(size - 64)
        mm.write(base + off, bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 64))))
    mm.write(0x10000 + 5 * PAGE, bytes(PAGE))          # a touched page of zeros
    mm.read(0x10000 + 9 * PAGE, 16)                    # a page only read
    mm.unmap(0x10000 + 20 * PAGE, 2 * PAGE)            # a split mapping keeps its buffer
    return mm


def test_fork_copies_every_private_byte_and_shares_shared() -> None:
    mm = _filled()
    child = mm.fork()
    assert [(m.start, m.size, m.perms, m.name) for m in child.mappings] == \
           [(m.start, m.size, m.perms, m.name) for m in mm.mappings]
    for pm, cm in zip(mm.mappings, child.mappings):
        assert mm.read(pm.start, pm.size) == child.read(cm.start, cm.size)
        assert (pm.buf is cm.buf) == pm.name.startswith("shared:")
    child.write(0x10000, b"child")                     # private: the parent does not see it
    assert mm.read(0x10000, 5) != b"child"
    child.write(0x800000, b"both")                     # shared: it does
    assert mm.read(0x800000, 4) == b"both"
    assert mm.pool is not None and mm.pool.used == mm.mapped + child.mapped
    child.release()
    assert mm.pool.used == mm.mapped


def test_touched_runs_name_the_written_pages() -> None:
    mm = AddressSpace()
    m = mm.map(0x10000, 32 * PAGE, "rw-", "x")
    mm.write(0x10000 + 3 * PAGE + 7, b"a")
    mm.write(0x10000 + 4 * PAGE, b"b")
    mm.write(0x10000 + 30 * PAGE, b"c")
    runs = memory._touched_runs(m.buf)
    if runs is None:                                   # a host without pagemap: bytes path
        return
    assert runs == [(3 * PAGE, 5 * PAGE), (30 * PAGE, 31 * PAGE)]


def test_fork_without_pagemap_is_the_same(monkeypatch) -> None:
    mm = _filled()
    monkeypatch.setattr(memory, "_touched_runs", lambda buf: None)
    child = mm.fork()
    for pm, cm in zip(mm.mappings, child.mappings):
        assert mm.read(pm.start, pm.size) == child.read(cm.start, cm.size)


def test_pagemap_is_reopened_in_a_forked_host_process() -> None:
    import os
    mm = _filled()
    mm.fork()                                          # opens the pagemap in this process
    pid = os.fork()
    if pid == 0:                                       # a host child: its own pages, its own map
        ok = False
        try:
            m = AddressSpace().map(0x10000, 8 * PAGE, "rw-", "x")
            m.buf[2 * PAGE] = 1
            ok = memory._touched_runs(m.buf) in (None, [(2 * PAGE, 3 * PAGE)])
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert status == 0


def test_copy_on_write_generations() -> None:
    """Each fork sees its parent as it was at that fork, whatever either side writes after:
    the first fork freezes the parent's buffers into a snapshot both map privately; a later one
    copies what the parent wrote since."""
    mm = AddressSpace(pool=MemoryPool())
    mm.map(0x10000, 16 * PAGE, "rw-", "heap")
    mm.write(0x10000, b"gen0")
    mm.write(0x10000 + 8 * PAGE, b"far")
    c1 = mm.fork()
    frozen = [m.buf in memory._SNAPSHOTS for m in mm.mappings]
    mm.write(0x10000, b"gen1")                         # the parent after the first fork
    mm.write(0x10000 + 3 * PAGE, b"new")
    c1.write(0x10000 + 8 * PAGE, b"kid")               # the child's own write
    c2 = mm.fork()
    g = c1.fork()                                      # a grandchild of the frozen snapshot
    mm.write(0x10000, b"gen2")
    assert c1.read(0x10000, 4) == b"gen0" and c1.read(0x10000 + 3 * PAGE, 3) == bytes(3)
    assert c2.read(0x10000, 4) == b"gen1" and c2.read(0x10000 + 3 * PAGE, 3) == b"new"
    assert c2.read(0x10000 + 8 * PAGE, 3) == b"far" and mm.read(0x10000 + 8 * PAGE, 3) == b"far"
    assert g.read(0x10000 + 8 * PAGE, 3) == b"kid" and g.read(0x10000, 4) == b"gen0"
    assert mm.read(0x10000, 4) == b"gen2"
    if memory._touched_runs(mm.mappings[0].buf) is not None:
        assert all(frozen)                             # the host had what this needs: COW
    snaps = {id(memory._SNAPSHOTS[m.buf]) for m in mm.mappings if m.buf in memory._SNAPSHOTS}
    for a in (g, c2, c1):
        a.release()
    assert mm.pool is not None and mm.pool.used == mm.mapped
    mm.release()                                       # the last views: the snapshot files go
    assert not any(id(s) in snaps for s in memory._SNAPSHOTS.values())
