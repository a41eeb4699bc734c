"""File metadata and file-to-file syscalls (emukern/kernel/fs/meta.py).

guest_asm/c/fsmeta.c runs chmod/fchmod/fchmodat[2], chown/fchown/lchown/fchownat, utimensat/
futimens, truncate, fallocate, flock (including a child blocked in flock(LOCK_EX) until the
parent's last close), mknod, sendfile, copy_file_range and the xattr calls in DIR of a --root-rw
root, and under qemu-user in a scratch directory (the host kernel's answers): the outputs must
be the same bytes, except where the host differs by design: fchmodat2 (the host kernel under
qemu answers ENOSYS; emukern models Linux 6.6+), and xattrs (emukern's root carries no user
xattrs: EOPNOTSUPP, where the host's tmpfs stores them)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from emukern.api import Machine

from conftest import ARCHES, QEMU, need_qemu

BY_DESIGN = {
    "fchmodat2 nofollow link": "-95",     # do_fchmodat: EOPNOTSUPP for a symlink
    "fchmodat2 bad flags": "-22",
    "getxattr": "-95",                    # no xattrs on emukern's file systems
    "setxattr": "-95",
}


def _run(exe: Path, root: Path, args: list[str], rw: bool = True):
    shutil.copy(exe, root / exe.name)
    return Machine(root=str(root), root_rw=rw).load(root / exe.name, args).run()


def _split(out: str) -> tuple[list[str], dict[str, str]]:
    keep, special = [], {}
    for line in out.splitlines():
        k, _, v = line.partition(": ")
        if k in BY_DESIGN:
            special[k] = v
        else:
            keep.append(line)
    return keep, special


@pytest.mark.qemu
@pytest.mark.parametrize("arch", ARCHES)
def test_fsmeta_matches_the_host_kernel(cbuild, arch, tmp_path):
    need_qemu(arch)
    exe = cbuild("fsmeta", arch, static=True)
    root = tmp_path / "root"
    (root / "w").mkdir(parents=True)
    r = _run(exe, root, ["/w"])
    assert r.exit_status == 0, r.message
    assert r.unknown_syscalls == {}
    scratch = tmp_path / "host"
    scratch.mkdir()
    q = subprocess.run([QEMU[arch], str(exe), str(scratch)], capture_output=True, timeout=120)
    assert q.returncode == 0
    ours, special = _split(r.stdout.decode())
    theirs, _ = _split(q.stdout.decode())
    assert ours == theirs
    assert special == BY_DESIGN
    out = r.stdout.decode()
    assert "f after chown (suid cleared): mode 100711 uid 1000 gid 1001" in out
    assert "times 1000.5 3000.7\n" in out and "child got lock: 0\n" in out
    assert list((root / "w").iterdir()) == []
    # nothing was given to the host: the owner and mode live in emukern's overlay only
    r2 = _run(exe, root, ["/w"])
    assert (r2.stdout, r2.cycles) == (r.stdout, r.cycles)            # deterministic




@pytest.mark.parametrize("arch", ARCHES)
def test_read_only_root_is_erofs(cbuild, arch, tmp_path):
    exe = cbuild("fsmeta_ro", arch, static=True)
    root = tmp_path / "root"
    (root / "w").mkdir(parents=True)
    (root / "w" / "f").write_text("data")
    (root / "w" / "f").chmod(0o644)
    r = _run(exe, root, [], rw=False)
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == ("chmod: -30\nchown: -30\nutimensat: -30\ntruncate: -30\n"
                                 "mknod: -30\nchmod proc: -1\nfifo: -30\nflock: 0\n"
                                 "futimens now: -30\ndev null mode 20666\n")
    assert (root / "w" / "f").read_text() == "data"
    assert (root / "w" / "f").stat().st_mode & 0o7777 == 0o644
