"""Debian trixie's sqlite3 on a file database: it takes fcntl record locks on the database (and
its journal) for every transaction, so it runs only where F_SETLK/F_GETLK work as on Linux
(before emukern/kernel/fs/locks.py it stopped with "disk I/O error (10)").

The packages come through emukern.debian.AptFetcher (cached under ~/.cache/emukern/apt); without
the network and without that cache the test skips."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from emukern.api import Machine
from emukern.debian import AptFetcher, FetchError, extract

from conftest import QEMU

# sqlite3 and the closure of its Depends in trixie (apt-cache depends, one level at a time)
PACKAGES = ("sqlite3", "libsqlite3-0", "libreadline8t64", "libtinfo6", "zlib1g", "libc6", "libgcc-s1")


def sqlite_root(arch: str, dest: Path) -> Path:
    """A merged-/usr guest root with sqlite3 and its libraries, and a writable /tmp."""
    fetcher = AptFetcher("trixie", arch)
    try:
        debs = [fetcher.download(p) for p in PACKAGES]
    except FetchError as exc:
        pytest.skip(f"Debian trixie's sqlite3 for {arch} could not be had: {exc}")
    for deb in debs:
        extract(deb, dest)
    for d in ("lib", "bin", "sbin"):
        if not (dest / d).exists():
            (dest / d).symlink_to(f"usr/{d}")
    (dest / "tmp").mkdir(exist_ok=True)
    return dest


def _sqlite(root: Path, *args: str):
    return Machine(root=str(root), root_rw=True).load(root / "usr/bin/sqlite3", list(args)).run()


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_sqlite3_file_database(arch, tmp_path):
    if shutil.which("dpkg-deb") is None:
        pytest.skip("dpkg-deb is not installed")
    root = sqlite_root(arch, tmp_path / "root")
    r = _sqlite(root, "/tmp/t.db", "create table t(x); insert into t values(1); select * from t;")
    assert r.exit_status == 0, (r.message, r.stderr)
    assert r.stdout == b"1\n"
    assert (root / "tmp" / "t.db").stat().st_size > 0
    # a second process opens the same database, writes and reads it back
    r = _sqlite(root, "/tmp/t.db", "insert into t values(41); select sum(x) from t;")
    assert (r.exit_status, r.stdout) == (0, b"42\n"), r.stderr
    assert not (root / "tmp" / "t.db-journal").exists()
    if shutil.which(QEMU[arch]) is not None:          # the host kernel says the same
        db = tmp_path / "host.db"
        q = subprocess.run([QEMU[arch], "-L", str(root), str(root / "usr/bin/sqlite3"), str(db),
                            "create table t(x); insert into t values(1); select * from t;"],
                           capture_output=True, timeout=120)
        assert (q.returncode, q.stdout) == (0, b"1\n")


# WAL mode: each connection maps the database's -shm file MAP_SHARED|PROT_WRITE (its wal-index)
# and the connections meet there; before shared root-file mappings were host mappings of the
# file, the first write stopped with "disk I/O error (10)" (the mmap was ENODEV).  Two
# connections of one process (the CLI's .connection), each with its own mapping of the file.
WAL_SCRIPT = """.open /tmp/w.db
PRAGMA journal_mode=WAL;
create table t(x);
insert into t values(1);
.connection 1
.open /tmp/w.db
select count(*) from t;
insert into t values(41);
.connection 0
select sum(x) from t;
PRAGMA journal_mode;
"""


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_sqlite3_wal_mode_two_connections(arch, tmp_path):
    if shutil.which("dpkg-deb") is None:
        pytest.skip("dpkg-deb is not installed")
    root = sqlite_root(arch, tmp_path / "root")
    (root / "tmp" / "wal.sql").write_text(WAL_SCRIPT)
    r = _sqlite(root, "-init", "/tmp/wal.sql", "-batch", ":memory:", ".exit")
    assert (r.exit_status, r.stdout, r.stderr) == (0, b"wal\n1\n42\nwal\n", b""), r.message
    assert (root / "tmp" / "w.db-shm").stat().st_size >= 32768       # the wal-index, mapped
    if shutil.which(QEMU[arch]) is not None:          # the host kernel says the same
        host = tmp_path / "host"
        host.mkdir()
        (host / "wal.sql").write_text(WAL_SCRIPT.replace("/tmp/w.db", str(host / "w.db")))
        q = subprocess.run([QEMU[arch], "-L", str(root), str(root / "usr/bin/sqlite3"), "-init",
                            str(host / "wal.sql"), "-batch", ":memory:", ".exit"],
                           capture_output=True, timeout=120)
        assert (q.returncode, q.stdout) == (0, b"wal\n1\n42\nwal\n")
