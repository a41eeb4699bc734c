"""Hostile issue item 5: an open directory costs constant host memory, whatever its size.

getdents reads the host directory as it goes (fs/file.py DirFile) instead of a snapshot taken
at open; the order (``.``, ``..``, then sorted by name), d_off (index + 1), telldir/seekdir
(lseek to a d_off) and rewinddir (lseek 0) stay what they were."""
from __future__ import annotations

import struct
import tracemalloc

import pytest

from emukern.kernel.fs.file import DirFile
from emukern.kernel.fs.vfs import Vfs

N = 2000


@pytest.fixture
def big(tmp_path):
    root = tmp_path / "root"
    d = root / "big"
    d.mkdir(parents=True)
    for i in range(N):
        (d / f"entry-{i:05d}-{'x' * 40}").touch()
    vfs = Vfs(str(root), False, {})
    node = vfs.walk("/big", vfs.root_node())
    return vfs, node


def _records(data: bytes) -> list[tuple[str, int]]:
    out, p = [], 0
    while p < len(data):
        _ino, off, reclen, _t = struct.unpack_from("<QqHB", data, p)
        name = data[p + 19:p + reclen].split(b"\0", 1)[0].decode()
        out.append((name, off))
        p += reclen
    return out


def _read_all(f: DirFile, bufsize: int = 4096) -> list[tuple[str, int]]:
    out = []
    while True:
        chunk = f.getdents(bufsize)
        assert isinstance(chunk, bytes)
        if not chunk:
            return out
        out += _records(chunk)


def test_getdents_order_offsets_and_seeks(big):
    vfs, node = big
    f = DirFile(node, 0, vfs, vfs.root_node())
    recs = _read_all(f)
    names = [n for n, _ in recs]
    assert names[:2] == [".", ".."] and names[2:] == sorted(names[2:]) and len(names) == N + 2
    assert [off for _, off in recs] == list(range(1, N + 3))        # d_off: index + 1
    # seekdir(telldir()) of entry k: the next read starts right after it
    k = 1234
    assert f.llseek(recs[k][1], 0) == recs[k][1]
    assert _records(f.getdents(200))[0][0] == names[k + 1]
    assert f.llseek(0, 0) == 0                                      # rewinddir
    assert _read_all(f, 1 << 16) == recs


def test_many_opens_of_a_large_directory_stay_bounded(big):
    vfs, node = big
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        files = [DirFile(node, 0, vfs, vfs.root_node()) for _ in range(200)]
        for f in files:
            f.getdents(4096)                          # each has read its first window
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    # a snapshot would be ~N entries x 500 opens (megabytes); the stream holds a few hundred
    # bytes per open directory
    print(f"held by 200 open directories of {N} entries: {held} bytes")
    assert held < 200 * 2048, held
    assert all(f.pos > 2 for f in files)
