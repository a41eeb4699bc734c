"""AddressSpace.find keeps the mapping of its last hit and the sorted starts: every change of the
mappings (map, unmap, protect, release, fork's copy) must drop them, so a lookup never answers
with a mapping that is gone or has other permissions."""
from __future__ import annotations

import pytest

from emukern.errors import MemoryFault
from emukern.machine.memory import AddressSpace

A, B = 0x10000, 0x40000


@pytest.fixture
def mm() -> AddressSpace:
    mm = AddressSpace()
    mm.map(A, 0x4000, "rw-", "a")
    mm.map(B, 0x2000, "r--", "b")
    return mm


def test_hits_and_misses(mm):
    a = mm.find(A + 0x10)
    assert a is not None and a.name == "a"
    assert mm.find(A + 0x3FFF) is a                 # the cached hit, to its last byte
    assert mm.find(A + 0x4000) is None              # one past its end
    assert mm.find(B).name == "b" and mm.find(A).name == "a"
    assert mm.find(A - 1) is None


def test_unmap_drops_the_cached_hit(mm):
    assert mm.find(A + 0x1000).name == "a"
    mm.unmap(A, 0x4000)
    assert mm.find(A + 0x1000) is None
    with pytest.raises(MemoryFault):
        mm.write(A + 0x1000, b"x")


def test_partial_unmap_and_protect_split(mm):
    assert mm.find(A + 0x3000).perms == "rw-"
    mm.protect(A + 0x2000, 0x2000, "r--")
    m = mm.find(A + 0x3000)
    assert m.perms == "r--" and m.start == A + 0x2000
    with pytest.raises(MemoryFault):
        mm.write(A + 0x3000, b"x")
    mm.write(A + 0x1000, b"ok")                     # the rw- half is still writable
    mm.unmap(A, 0x1000)
    assert mm.find(A) is None and mm.find(A + 0x1000).start == A + 0x1000


def test_map_after_a_miss_and_release(mm):
    assert mm.find(0x80000) is None
    mm.map(0x80000, 0x1000, "rw-", "c")
    assert mm.find(0x80000).name == "c"             # the sorted starts were rebuilt
    mm.release()
    assert mm.find(A) is None and mm.find(0x80000) is None


def test_fork_has_its_own_mappings(mm):
    mm.write(A, b"parent")
    assert mm.find(A) is not None
    child = mm.fork()
    cm = child.find(A)
    assert cm is not None and cm is not mm.find(A)
    assert child.read(A, 6) == b"parent"
    child.write(A, b"child!")
    assert mm.read(A, 6) == b"parent"


def test_rotating_mappings_stay_cached_and_are_dropped(mm, monkeypatch):
    """Code, stack and vDSO in turn (svc words read, a frame written and read): after the first
    round every lookup is a cached hit (no search); an unmap drops them all."""
    mm.map(0x90000, 0x1000, "r-x", "vdso")
    for _ in range(2):
        assert mm.find(A + 8).name == "a"
        assert mm.find(B + 8).name == "b"
        assert mm.find(0x90008).name == "vdso"
    searches = []
    monkeypatch.setattr(AddressSpace, "_starts", lambda self: searches.append(1) or [])
    for _ in range(3):
        assert mm.find(A + 8).name == "a" and mm.find(B + 8).name == "b"
        assert mm.find(0x90008).name == "vdso"
    assert searches == []
    monkeypatch.undo()
    mm.unmap(B, 0x2000)
    assert mm.find(B + 8) is None
    assert mm.find(A + 8).name == "a"
    mm.unmap(A, 0x4000)
    assert mm.find(A + 8) is None and mm.find(B + 8) is None


def test_reads_and_writes_through_the_cached_hit_keep_the_rules(mm):
    """read/write try find's last hit first: permissions, the end of the mapping and code_gen
    (a write into executable memory) are checked there as on the full path."""
    mm.map(0x90000, 0x1000, "r-x", "code")
    assert mm.find(B).name == "b"                   # b (r--) is the cached hit
    assert mm.read(B, 4) == bytes(4)
    with pytest.raises(MemoryFault):
        mm.write(B, b"x")                           # inside the hit, but not writable
    with pytest.raises(MemoryFault):
        mm.read(B + 0x1FFC, 8)                      # runs past the hit's end into nothing
    gen = mm.code_gen
    mm.write(0x90000, b"\x13\x00\x00\x00", need="")  # the kernel writing code (need="")
    assert mm.find(0x90000).name == "code"
    mm.write(0x90004, b"\x13\x00\x00\x00", need="")  # now through the hit
    assert mm.code_gen == gen + 2
    assert mm.read(0x90000, 8, "x") == b"\x13\x00\x00\x00" * 2
