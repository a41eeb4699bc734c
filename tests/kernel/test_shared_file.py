"""MAP_SHARED of a root file (emukern/kernel/fs/file.py's host file views, kernel/syscalls/
mmap.py, mremap.py, msync.py): guest_asm/c/shared_file.c maps a file of a writable root
read-write in two processes and checks coherence with read/pread/pwrite, msync, ftruncate both
ways with SIGBUS past the end, mprotect/munmap of a part, mremap (move, grow, DONTUNMAP) and a
store after close; with "ro", a read-only root's file mapped read-only.

test_shared_file_probe.expected is what qemu-user printed on both arches (the host's Linux),
unchanged."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from emukern.api import Machine

EXPECTED = Path(__file__).with_name("test_shared_file_probe.expected")
QEMU = {"riscv64": "qemu-riscv64", "arm64": "qemu-aarch64"}


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_shared_file_probe_matches_linux(cguest, tmp_path, arch):
    (tmp_path / "tmp").mkdir()
    r = Machine(arch=arch, root=str(tmp_path), root_rw=True).load(cguest("shared_file", arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == EXPECTED.read_text()
    assert list((tmp_path / "tmp").iterdir()) == []             # the probe removed its file


def test_read_only_root_maps_shared_read_only(cguest, tmp_path):
    (tmp_path / "tmp").mkdir()
    (tmp_path / "tmp" / "ro.txt").write_bytes(b"hello world\n")
    m = Machine(arch="arm64", root=str(tmp_path)).load(cguest("shared_file", "arm64"), ["/tmp/ro.txt", "ro"])
    r = m.run()
    assert r.exit_status == 0, r.message
    # EROFS for a writable open, EACCES for PROT_WRITE and mprotect(PROT_WRITE)
    assert r.stdout == b"ro root: hello; O_RDWR open errno 30; PROT_WRITE refused; mprotect -1 errno 13\n"
    assert (tmp_path / "tmp" / "ro.txt").read_bytes() == b"hello world\n"


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_shared_file_probe_under_qemu_user(cguest, tmp_path, arch):
    if shutil.which(QEMU[arch]) is None:
        pytest.skip(f"{QEMU[arch]} (qemu-user) is not installed")
    q = subprocess.run([QEMU[arch], str(cguest("shared_file", arch)), str(tmp_path / "f.dat")],
                       capture_output=True, timeout=120)
    assert q.returncode == 0, q.stderr
    assert q.stdout.decode() == EXPECTED.read_text()


BIG_MAP = r"""
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
int main(void)
{
	int fd = open("/tmp/big", O_RDWR | O_CREAT | O_TRUNC, 0644);
	ftruncate(fd, 64 << 20);
	char *p = mmap(0, 64 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) { perror("mmap"); return 1; }
	for (int i = 0; i < 64; i++) p[i << 20] = 'a' + i % 26;
	pid_t c = fork();
	if (c == 0) { p[1] = '!'; _exit(0); }
	waitpid(c, 0, 0);
	char b[2];
	pread(fd, b, 2, 0);
	printf("%c%c %c\n", b[0], b[1], p[63 << 20]);
	munmap(p, 64 << 20);
	return 0;
}
"""


def test_shared_file_mapping_is_not_charged_as_guest_memory(cguest, tmp_path):
    """A 64 MiB shared mapping of a root file (and its fork) under a 32 MiB --mem-limit: the
    file's pages are the host's page cache, not the machine's guest memory."""
    src = tmp_path / "big_map.c"
    src.write_text(BIG_MAP)
    root = tmp_path / "root"
    (root / "tmp").mkdir(parents=True)
    m = Machine(arch="arm64", root=str(root), root_rw=True, mem_limit=32 << 20)
    r = m.load(cguest(src, "arm64"), []).run()
    assert (r.exit_status, r.stdout) == (0, b"a! l\n"), r.message
    assert (root / "tmp" / "big").stat().st_size == 64 << 20
