"""System V IPC (kernel/ipc/, kernel/syscalls/ipc_*.py): C probes in guest_asm/c/sysv_*.c run
on both architectures and print only what does not depend on ids or addresses; the expected
text is what qemu-user printed (qemu-user forwards SysV IPC to the host kernel, so it is
Linux's answer), and the qemu tests check that it still is."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from emukern.api import Machine

QEMU = {"riscv64": "qemu-riscv64", "arm64": "qemu-aarch64"}
HERE = Path(__file__).parent / "sysv_ipc_expected"
PROBES = ["sysv_shm", "sysv_sem", "sysv_msg"]


def expected(probe: str) -> str:
    return (HERE / f"{probe}.txt").read_text()


@pytest.mark.parametrize("probe", PROBES)
@pytest.mark.parametrize("cpus", [1, 2])
@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_probe_matches_linux(cguest, probe, arch, cpus):
    r = Machine(arch=arch, cpus=cpus).load(cguest(probe, arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == expected(probe)


@pytest.mark.qemu
@pytest.mark.parametrize("probe", PROBES)
@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_qemu_user_agrees(cguest, probe, arch):
    if shutil.which(QEMU[arch]) is None:
        pytest.skip(f"{QEMU[arch]} is not installed")
    q = subprocess.run([QEMU[arch], str(cguest(probe, arch))], capture_output=True, timeout=120)
    assert q.returncode == 0 and q.stdout.decode() == expected(probe)


SHM_LIMIT = r'''
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/shm.h>
int main(void)
{
	int big = shmget(IPC_PRIVATE, 48 << 20, 0600);
	printf("48 MiB: %s\n", big < 0 ? strerror(errno) : "ok");
	int more = shmget(IPC_PRIVATE, 48 << 20, 0600);
	printf("48 MiB more: %s\n", more < 0 ? strerror(errno) : "ok");
	shmctl(big, IPC_RMID, NULL);
	more = shmget(IPC_PRIVATE, 48 << 20, 0600);
	printf("after IPC_RMID: %s\n", more < 0 ? strerror(errno) : "ok");
	char *p = shmat(more, NULL, 0);
	printf("attach: %s\n", p == (void *)-1 ? strerror(errno) : "ok");
	return 0;
}
'''


def test_segments_are_charged_to_the_memory_limit(cguest, tmp_path):
    """A segment's pages count against --mem-limit from shmget on (ENOMEM past it), go back
    at IPC_RMID, and an attach is charged like any mapping of the process."""
    src = tmp_path / "shm_limit.c"
    src.write_text(SHM_LIMIT)
    r = Machine(arch="riscv64", mem_limit=128 << 20).load(cguest(src, "riscv64"), []).run()
    assert r.stdout.decode() == ("48 MiB: ok\n48 MiB more: ok\n"
                                 "after IPC_RMID: ok\nattach: Cannot allocate memory\n"), r.stdout


LINUX_ONLY = r'''
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/msg.h>
#include <sys/shm.h>
#include <sys/wait.h>
static void on_alarm(int s) { (void)s; }
int main(void)
{
	struct { long type; char text[8]; } b = { 1, "x" };
	int q = msgget(IPC_PRIVATE, 0600), id = shmget(IPC_PRIVATE, 4096, 0600);
	printf("msgsnd size -1: %d\n", msgsnd(q, &b, (size_t)-1, 0) == -1 ? errno : 0);
	printf("msgrcv size -1: %d\n", msgrcv(q, &b, (size_t)-1, 0, 0) == -1 ? errno : 0);
	printf("shmat NULL SHM_REMAP: %d\n", shmat(id, NULL, SHM_REMAP) == (void *)-1 ? errno : 0);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	alarm(1);
	printf("msgrcv under SA_RESTART: %d\n", msgrcv(q, &b, 8, 0, 0) == -1 ? errno : 0);
	return 0;
}
'''


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_cases_qemu_user_cannot_show(cguest, arch, tmp_path):
    """Linux's answers where qemu-user's own code decides first: a size of (size_t)-1 is
    EINVAL (qemu allocates size + 8 and crashes), shmat(NULL, SHM_REMAP) is EINVAL (qemu picks
    the address itself); and msgrcv interrupted by a handled signal is EINTR although the
    handler has SA_RESTART (ipc/msg.c's -ERESTARTNOHAND)."""
    src = tmp_path / "linux_only.c"
    src.write_text(LINUX_ONLY)
    r = Machine(arch=arch).load(cguest(src, arch), []).run()
    assert r.stdout.decode() == ("msgsnd size -1: 22\nmsgrcv size -1: 22\nshmat NULL SHM_REMAP: 22\n"
                                 "msgrcv under SA_RESTART: 4\n")


def test_debian_ipcmk(tmp_path):
    """Debian trixie's ipcmk (util-linux) makes a segment, a queue and a semaphore set in a
    fresh IPC namespace: Linux hands out id 0 of each kind first."""
    if shutil.which("dpkg-deb") is None:
        pytest.skip("dpkg-deb is not installed")
    from emukern.debian import AptFetcher, FetchError, extract
    root = tmp_path / "root"
    try:
        debs = [AptFetcher("trixie", "arm64").download(p) for p in ("util-linux", "libc6")]
    except FetchError as exc:
        pytest.skip(f"Debian trixie's util-linux could not be had: {exc}")
    for deb in debs:
        extract(deb, root)
    for d in ("lib", "bin", "sbin"):
        if not (root / d).exists():
            (root / d).symlink_to(f"usr/{d}")
    r = Machine(arch="arm64", root=str(root)).load(root / "usr/bin/ipcmk", ["ipcmk", "-M", "4096", "-S", "3", "-Q"]).run()
    assert (r.exit_status, r.stdout) == (0, b"Shared memory id: 0\nMessage queue id: 0\nSemaphore id: 0\n"), r.stderr
