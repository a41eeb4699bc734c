"""fcntl record locks (emukern/kernel/fs/locks.py, the lock commands of syscalls/fcntl.py).

guest_asm/c/posix_locks.c exercises POSIX and OFD locks across fork, threads, F_GETLK (every
field it reports, l_pid -1 for an OFD lock), merging and splitting of one owner's ranges, the
l_whence/l_len forms and their errors, release on any close by the owner (a dup, another open,
a thread's close) and at exit, OFD ownership by the description, blocking F_SETLKW woken by an
unlock, EDEADLK, a signal ending the wait (EINTR, and a restart under SA_RESTART), and flock
locks being independent of POSIX locks.  qemu-user runs the same binary on the host kernel:
its output is the oracle, and emukern's must be the same bytes."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from emukern.api import Machine

from conftest import ARCHES, QEMU, need_qemu


def _run(exe: Path, root: Path):
    shutil.copy(exe, root / exe.name)
    return Machine(root=str(root), root_rw=True).load(root / exe.name, ["/w"]).run()


@pytest.mark.qemu
@pytest.mark.parametrize("arch", ARCHES)
def test_record_locks_match_the_host_kernel(cbuild, arch, tmp_path):
    need_qemu(arch)
    exe = cbuild("posix_locks", arch, static=True, libs=("-lpthread",))
    root = tmp_path / "root"
    (root / "w").mkdir(parents=True)
    r = _run(exe, root)
    assert r.exit_status == 0, r.message
    assert r.unknown_syscalls == {}
    scratch = tmp_path / "host"
    scratch.mkdir()
    q = subprocess.run([QEMU[arch], str(exe), str(scratch)], capture_output=True, timeout=120)
    assert q.returncode == 0, q.stderr
    assert r.stdout.decode() == q.stdout.decode()
    out = r.stdout.decode()
    # the facts the comparison covers, spelled out (a host that changed would show here first)
    for line in ("sizeof(struct flock) 32\n",
                 "  child F_SETLK W 15+10: -11\n",
                 "  seen by another process: rrrwwrrrrr..........wwrrrrrrww..........\n",
                 "POSIX F_GETLK sees OFD: ret 0 type W whence 0 start 0 len 10 pid -1\n",
                 "parent F_SETLKW W 1+1 (child waits for us): -35\n",
                 "  child F_SETLKW W 0+1 returned 0\n",
                 "  child F_SETLKW interrupted: -4\n",
                 "  child F_SETLKW with SA_RESTART: 0\n",
                 "  child POSIX W over flock'd file: 0\n",
                 "done\n"):
        assert line in out
    r2 = _run(exe, root)
    assert (r2.stdout, r2.cycles) == (r.stdout, r.cycles)            # deterministic


@pytest.mark.parametrize("arch", ARCHES)
def test_exec_drops_locks_only_through_close_on_exec(cbuild, arch, tmp_path):
    """execve's close of the O_CLOEXEC descriptors drops the locks on their file; a lock taken
    through a descriptor that stays open is still the process's after exec (fcntl(2): "record
    locks are preserved across an execve").  qemu-user cannot exec a foreign binary without
    binfmt_misc, so the expected text is written out here."""
    exe = cbuild("posix_locks_exec", arch, static=True)
    root = tmp_path / "root"
    (root / "w").mkdir(parents=True)
    r = _run(exe, root)
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == (
        "lock through cloexec fd: 0\n"
        "lock through kept fd: 0\n"
        "after exec:\n"
        "  file locked through an O_CLOEXEC descriptor: unlocked\n"
        "  file locked through a kept descriptor: locked by the exec'd process\n")
