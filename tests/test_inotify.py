"""inotify (kernel/syscalls/inotify.py): guest_asm/c/inotify_probe.c makes a directory in a
writable guest root and prints the events of its own changes; the expected text is what
qemu-user printed (it forwards inotify to the host kernel: Linux's events, in Linux's order)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from emukern.api import Machine

QEMU = {"riscv64": "qemu-riscv64", "arm64": "qemu-aarch64"}
EXPECTED = (Path(__file__).parent / "sysv_ipc_expected" / "inotify_probe.txt").read_text()


@pytest.mark.parametrize("cpus", [1, 2])
@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_inotify_events_match_linux(cguest, arch, cpus, tmp_path):
    r = Machine(arch=arch, cpus=cpus, root=str(tmp_path), root_rw=True).load(cguest("inotify_probe", arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == EXPECTED
    assert list(tmp_path.iterdir()) == []          # the probe cleaned up after itself


@pytest.mark.qemu
@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_qemu_user_agrees(cguest, arch, tmp_path):
    if shutil.which(QEMU[arch]) is None:
        pytest.skip(f"{QEMU[arch]} is not installed")
    q = subprocess.run([QEMU[arch], str(cguest("inotify_probe", arch))], capture_output=True, timeout=60,
                       cwd=tmp_path)
    assert q.returncode == 0 and q.stdout.decode() == EXPECTED


def test_a_kernel_without_inotify_keeps_no_state(cguest, tmp_path):
    """A program that makes files but never calls inotify_init1 leaves the kernel without
    inotify state: every fsnotify call returned at its first test."""
    m = Machine(arch="riscv64", root=str(tmp_path), root_rw=True)
    m.load(cguest("fs_calls", "riscv64"), [])
    m.run()
    assert getattr(m.kernel, "inotify_groups", None) is None


DRIVER = r'''
#include <fcntl.h>
#include <unistd.h>
#include <sys/wait.h>
int main(void)
{
	pid_t c = fork();
	if (c == 0) {
		execl("/usr/bin/inotifywait", "inotifywait", "-q", "-e", "create,delete", "-m", "-t", "1", "/tmp", (char *)0);
		_exit(127);
	}
	usleep(200000);
	close(open("/tmp/made", O_CREAT | O_WRONLY, 0644));
	unlink("/tmp/made");
	int st;
	waitpid(c, &st, 0);
	return WEXITSTATUS(st);
}
'''


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_debian_inotifywait(cguest, arch, tmp_path):
    """Debian trixie's inotifywait (inotify-tools) watching /tmp while another process makes and
    removes a file: it sizes its reads with ioctl(FIONREAD) and prints both events, then its
    one-second timeout ends it (status 2)."""
    if shutil.which("dpkg-deb") is None:
        pytest.skip("dpkg-deb is not installed")
    from emukern.debian import AptFetcher, FetchError, extract
    root = tmp_path / "root"
    try:
        debs = [AptFetcher("trixie", arch).download(p) for p in ("inotify-tools", "libinotifytools0", "libc6")]
    except FetchError as exc:
        pytest.skip(f"Debian trixie's inotify-tools for {arch} could not be had: {exc}")
    for deb in debs:
        extract(deb, root)
    for d in ("lib", "bin", "sbin"):
        if not (root / d).exists():
            (root / d).symlink_to(f"usr/{d}")
    (root / "tmp").mkdir()
    src = tmp_path / "drv.c"
    src.write_text(DRIVER)
    shutil.copy(cguest(src, arch), root / "drv")
    r = Machine(arch=arch, root=str(root), root_rw=True).load(root / "drv", ["/drv"]).run()
    assert (r.exit_status, r.stdout) == (2, b"/tmp/ CREATE made\n/tmp/ DELETE made\n"), (r.message, r.stderr)
