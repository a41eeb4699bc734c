"""/dev/shm (emukern/kernel/fs/shmfs.py): glibc's shm_open/shm_unlink, ftruncate, mmap
MAP_SHARED shared with a forked child, a second open, O_TRUNC, listing, with
guest_asm/c/dev_shm_probe.c; and the memory limit with guest_asm/c/dev_shm_fill.c.

test_dev_shm_probe.expected is what qemu-user printed on both arches (the host's Linux and its
/dev/shm tmpfs), unchanged.  /dev/shm is the kernel's: the same with no root, a read-only root,
or a writable one, and nothing reaches the root directory."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from emukern.api import Machine

EXPECTED = Path(__file__).with_name("test_dev_shm_probe.expected")
QEMU = {"riscv64": "qemu-riscv64", "arm64": "qemu-aarch64"}


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_dev_shm_probe_matches_linux_without_a_root(cguest, arch):
    r = Machine(arch=arch).load(cguest("dev_shm_probe", arch), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == EXPECTED.read_text()


@pytest.mark.parametrize("rw", [False, True])
def test_dev_shm_probe_with_a_root(cguest, tmp_path, rw):
    (tmp_path / "dev").mkdir()
    r = Machine(arch="riscv64", root=str(tmp_path), root_rw=rw).load(cguest("dev_shm_probe", "riscv64"), []).run()
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == EXPECTED.read_text()
    assert list((tmp_path / "dev").iterdir()) == []          # never in the root


def test_dev_shm_is_charged_to_the_memory_limit(cguest):
    """write() into /dev/shm stops at --mem-limit with ENOSPC (a full tmpfs); unlinking gives
    the pages back; a sparse ftruncate charges nothing."""
    r = Machine(arch="arm64", mem_limit=48 << 20).load(cguest("dev_shm_fill", "arm64"), []).run()
    assert r.exit_status == 0, r.message
    lines = r.stdout.decode().splitlines()
    a = int(lines[0].split()[1])
    assert 40 << 20 < a < 48 << 20 and lines[0].endswith("errno 28")
    assert lines[2] == "same again after unlink: 1"
    assert lines[3] == "ftruncate 64 GiB: 0"


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_dev_shm_probe_under_qemu_user(cguest, arch):
    if shutil.which(QEMU[arch]) is None:
        pytest.skip(f"{QEMU[arch]} (qemu-user) is not installed")
    q = subprocess.run([QEMU[arch], str(cguest("dev_shm_probe", arch))], capture_output=True, timeout=120)
    assert q.returncode == 0
    assert q.stdout.decode() == EXPECTED.read_text()
