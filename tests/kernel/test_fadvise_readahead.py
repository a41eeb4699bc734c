"""fadvise64 (emukern/kernel/syscalls/fadvise.py) and readahead (syscalls/readahead.py) with
guest_asm/c/fadvise_probe.c: every kind of file a program meets (regular read-only and
write-only, directory, both pipe ends, eventfd, memfd, /proc), closed and negative descriptors,
bad advice, negative lengths and counts, upper register halves of the int arguments.  Run in a
--root-rw root and under qemu-user in a scratch directory (qemu passes both calls to the host
kernel): the outputs must be the same bytes.  Before these handlers both were ENOSYS."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from emukern.api import Machine

ARCHES = ["arm64", "riscv64"]
QEMU = {"riscv64": "qemu-riscv64", "arm64": "qemu-aarch64"}


def _emukern(exe: Path, tmp_path: Path):
    root = tmp_path / "root"
    (root / "w").mkdir(parents=True)
    shutil.copy(exe, root / "probe")
    return Machine(root=str(root), root_rw=True).load(root / "probe", ["/w"]).run()


@pytest.mark.parametrize("arch", ARCHES)
def test_fadvise_readahead_errors(cguest, arch, tmp_path):
    r = _emukern(cguest("fadvise_probe", arch), tmp_path)
    assert r.exit_status == 0, r.message
    assert r.unknown_syscalls == {}
    assert r.syscalls["fadvise64"] == 31 and r.syscalls["readahead"] == 16
    out = r.stdout.decode()
    for line in ("fadvise pipe bad adv         -1 errno=29",      # ESPIPE before the advice
                 "fadvise file adv=6           -1 errno=22",
                 "fadvise len -1               -1 errno=22",
                 "fadvise closed bad adv       -1 errno=9",
                 "readahead write-only         -1 errno=9",       # not FMODE_READ: EBADF
                 "readahead pipe w             -1 errno=9",
                 "readahead pipe r             -1 errno=22",      # not a regular file
                 "readahead dir                -1 errno=22",
                 "readahead eventfd            -1 errno=22",
                 "readahead count 2^63         -1 errno=22",      # a negative loff_t length
                 "readahead file               0 errno=0"):
        assert line + "\n" in out


@pytest.mark.qemu
@pytest.mark.parametrize("arch", ARCHES)
def test_fadvise_readahead_match_the_host_kernel(cguest, arch, tmp_path):
    if shutil.which(QEMU[arch]) is None:
        pytest.skip(f"{QEMU[arch]} (qemu-user) is not installed")
    exe = cguest("fadvise_probe", arch)
    r = _emukern(exe, tmp_path)
    assert r.exit_status == 0, r.message
    host = tmp_path / "host"
    host.mkdir()
    q = subprocess.run([QEMU[arch], str(exe), str(host)], capture_output=True, timeout=120)
    assert q.returncode == 0, q.stderr
    assert r.stdout.decode() == q.stdout.decode()
