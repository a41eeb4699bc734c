"""renameat2 / renameat / linkat / symlinkat in a writable guest root (kernel/syscalls/namei.py).

guest_asm/c/fs_namespace.c runs the same calls under emukern (in DIR of a --root-rw root) and under
qemu-user (in a scratch directory, i.e. the host kernel's answers): the outputs must be the same
bytes.  Then what only emukern can show: a read-only root is EROFS, /proc is another file system
(EXDEV), renameat exists only in arm64's table, and a symlink's target is resolved inside the
root, never on the host."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from emukern.api import Machine

from conftest import ARCHES, QEMU, need_qemu


def _run(exe: Path, root: Path, args: list[str], rw: bool = True):
    shutil.copy(exe, root / exe.name)
    return Machine(root=str(root), root_rw=rw).load(root / exe.name, args).run()


@pytest.mark.qemu
@pytest.mark.parametrize("arch", ARCHES)
def test_namespace_calls_match_the_host_kernel(cbuild, arch, tmp_path):
    need_qemu(arch)
    exe = cbuild("fs_namespace", arch, static=True)
    root = tmp_path / "root"
    (root / "w").mkdir(parents=True)
    r = _run(exe, root, ["/w"])
    assert r.exit_status == 0, r.message
    scratch = tmp_path / "host"
    scratch.mkdir()
    q = subprocess.run([QEMU[arch], str(exe), str(scratch)], capture_output=True, timeout=120)
    assert q.returncode == 0
    assert r.stdout.decode() == q.stdout.decode()
    assert "exchange c b: 0\n  b: A\n  c: B\n" in r.stdout.decode()     # not a copy: the swap
    assert list((root / "w").iterdir()) == []                         # it cleaned up after itself


SHELLISH = r'''
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void)
{
	printf("renameat: %ld\n", syscall(38, AT_FDCWD, "/w/a", AT_FDCWD, "/w/b") ? -errno : 0L);
	printf("renameat2: %ld\n", syscall(SYS_renameat2, AT_FDCWD, "/w/b", AT_FDCWD, "/w/c", 0) ? -errno : 0L);
	printf("into /proc: %ld\n", syscall(SYS_renameat2, AT_FDCWD, "/w/c", AT_FDCWD, "/proc/x", 0) ? -errno : 0L);
	printf("symlink: %d\n", symlinkat("/../../../../etc/hostname", AT_FDCWD, "/w/esc") ? -errno : 0);
	int fd = open("/w/esc", O_RDONLY);
	printf("open through it: %d\n", fd < 0 ? -errno : 0);
	return 0;
}
'''


@pytest.mark.parametrize("arch", ARCHES)
def test_read_only_root_proc_renameat_and_confined_symlinks(arch, tmp_path, cguest):
    src = tmp_path / "ns_edges.c"
    src.write_text(SHELLISH)
    exe = cguest(src, arch)
    root = tmp_path / "root"
    (root / "w").mkdir(parents=True)
    (root / "w" / "a").write_text("A")
    r = _run(exe, root, [])
    out = r.stdout.decode()
    # renameat (38) is in arm64's syscall table only; riscv64's libc uses renameat2
    first = "renameat: 0\nrenameat2: 0\n" if arch == "arm64" else "renameat: -38\nrenameat2: -2\n"
    assert out.startswith(first), out
    # /proc is another file system; the symlink is made, and its absolute target is the
    # guest's /etc/hostname (absent in this root), not the host's (which exists)
    assert "into /proc: -18\n" in out and "symlink: 0\n" in out and "open through it: -2\n" in out
    assert Path("/etc/hostname").exists()
    assert (root / "w" / "esc").is_symlink()
    ro = tmp_path / "ro"
    (ro / "w").mkdir(parents=True)
    (ro / "w" / "a").write_text("A")
    r = _run(exe, ro, [], rw=False)
    out = r.stdout.decode()
    assert ("renameat: -30\n" if arch == "arm64" else "renameat: -38\n") in out
    assert "renameat2: -30\n" in out and "symlink: -30\n" in out and (ro / "w" / "a").exists()
