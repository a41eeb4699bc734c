"""splice, tee, vmsplice and sendfile into pipes and sockets (emukern/kernel/syscalls/splice.py,
read_write.py's sys_sendfile) with guest_asm/c/splice_probe.c: every direction (file<->pipe,
pipe<->socket, pipe->pipe, tee), offsets, SPLICE_F_NONBLOCK and O_NONBLOCK, a blocked splice
woken by a writer, and the EINVAL/ESPIPE/EBADF/EAGAIN/EPIPE cases.

test_splice_probe.expected is what qemu-user printed on both arches (qemu passes these calls
to the host's Linux), unchanged; when qemu-user is installed the test also runs it again."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from emukern.api import Machine

EXPECTED = Path(__file__).with_name("test_splice_probe.expected")
QEMU = {"riscv64": "qemu-riscv64", "arm64": "qemu-aarch64"}


def _run(cguest, arch: str, tmp_path: Path):
    root = tmp_path / "root"
    (root / "tmp").mkdir(parents=True)
    r = Machine(arch=arch, root=str(root), root_rw=True).load(cguest("splice_probe", arch), ["/tmp"]).run()
    return r, root


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_splice_probe_matches_linux(cguest, arch, tmp_path):
    r, root = _run(cguest, arch, tmp_path)
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == EXPECTED.read_text()
    assert r.unknown_syscalls == {}
    assert r.syscalls["splice"] >= 20 and r.syscalls["tee"] == 5 and r.syscalls["vmsplice"] == 5
    assert list((root / "tmp").iterdir()) == []


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_splice_probe_under_qemu_user(cguest, arch, tmp_path):
    if shutil.which(QEMU[arch]) is None:
        pytest.skip(f"{QEMU[arch]} (qemu-user) is not installed")
    q = subprocess.run([QEMU[arch], str(cguest("splice_probe", arch)), str(tmp_path)],
                       capture_output=True, timeout=120)
    assert q.returncode == 0
    assert q.stdout.decode() == EXPECTED.read_text()


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_sendfile_into_a_blocking_socket_sends_everything(cguest, arch, tmp_path):
    root = tmp_path / "root"
    (root / "tmp").mkdir(parents=True)
    exe = cguest("splice_sendfile_block", arch)
    r = Machine(arch=arch, root=str(root), root_rw=True).load(exe, ["/tmp"]).run()
    assert r.exit_status == 0, r.message
    # (the same two lines from qemu-user, the host's Linux)
    assert r.stdout.decode() == "sendfile 1048576 off 1048576\nchild got 1048576 sum 4060610560\n"


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_splice_into_a_full_socket_and_one_whose_peer_is_gone(cguest, arch):
    r = Machine(arch=arch).load(cguest("splice_sock_full", arch), []).run()
    assert r.exit_status == 0, r.message
    # (the same two lines from qemu-user, the host's Linux)
    assert r.stdout.decode() == "filled 262144 then -1 errno 11\npeer gone: -1 errno 32 sig 13\n"
