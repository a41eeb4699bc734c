"""FIFOs (emukern/kernel/fs/fifo.py, mknodat in syscalls/namei.py) with guest_asm/c/fifo_probe.c:
mkfifo through glibc, stat, fifo_open's rules (O_NONBLOCK reader, ENXIO writer, O_RDWR, an
O_WRONLY open waiting for a reader and an O_RDONLY open waiting for a writer, each met by a
forked partner), data, EPIPE, ESPIPE, a waiting open interrupted by a signal (EINTR, and another
process then finds no reader left: ENXIO), unlink.

test_fifo_probe.expected is what qemu-user printed on both arches (the host's Linux), unchanged.
The host FIFO node is only a name: emukern never opens it, so a FIFO that was in the root
before the run (``pre``) behaves the same."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from emukern.api import Machine

EXPECTED = Path(__file__).with_name("test_fifo_probe.expected")
QEMU = {"riscv64": "qemu-riscv64", "arm64": "qemu-aarch64"}


def _run(cguest, arch: str, tmp_path: Path, mode: str = "", rw: bool = True):
    root = tmp_path / "root"
    (root / "tmp").mkdir(parents=True)
    if mode == "pre":
        os.mkfifo(root / "tmp" / "pre")
    argv = ["/tmp"] + ([mode] if mode else [])
    r = Machine(arch=arch, root=str(root), root_rw=rw).load(cguest("fifo_probe", arch), argv).run()
    return r, root


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_fifo_probe_matches_linux(cguest, arch, tmp_path):
    r, root = _run(cguest, arch, tmp_path)
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == EXPECTED.read_text()
    assert list((root / "tmp").iterdir()) == []


def test_fifo_already_in_the_root(cguest, tmp_path):
    """A host FIFO someone put in the root is never host-opened: the same lines, but for the
    mkfifo that made it."""
    r, root = _run(cguest, "arm64", tmp_path, "pre")
    assert r.exit_status == 0, r.message
    assert r.stdout.decode() == EXPECTED.read_text().split("\n", 1)[1]


def test_mkfifo_in_a_read_only_root(cguest, tmp_path):
    r, root = _run(cguest, "riscv64", tmp_path, "ro", rw=False)
    assert r.exit_status == 0, r.message
    # EROFS for the FIFO; a device node stays EPERM (nodev, checked first as before)
    assert r.stdout.decode().splitlines() == [f'{"mkfifo read-only":<30} -1 30',
                                              f'{"mknod chr read-only":<30} -1 1']
    assert list((root / "tmp").iterdir()) == []


def test_mkfifo_without_a_root(cguest):
    r = Machine(arch="arm64").load(cguest("fifo_probe", "arm64"), ["/", "ro"]).run()
    assert r.stdout.decode().splitlines()[0] == f'{"mkfifo read-only":<30} -1 30'


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_fifo_probe_under_qemu_user(cguest, arch, tmp_path):
    if shutil.which(QEMU[arch]) is None:
        pytest.skip(f"{QEMU[arch]} (qemu-user) is not installed")
    q = subprocess.run([QEMU[arch], str(cguest("fifo_probe", arch)), str(tmp_path)],
                       capture_output=True, timeout=120)
    assert q.returncode == 0
    assert q.stdout.decode() == EXPECTED.read_text()


# coreutils and the closure of its Pre-Depends in trixie
COREUTILS = ("coreutils", "libacl1", "libattr1", "libc6", "libcap2", "libgmp10", "libselinux1", "libssl3t64",
             "libsystemd0", "libpcre2-8-0", "libzstd1", "liblzma5", "libgcc-s1")


@pytest.mark.parametrize("arch", ["arm64", "riscv64"])
def test_debian_mkfifo_stat_ls_rm(arch, tmp_path):
    """Debian trixie's own mkfifo(1), stat(1), ls(1) and rm(1) (dynamic, glibc) in a writable root."""
    from emukern.debian import AptFetcher, FetchError, extract
    if shutil.which("dpkg-deb") is None:
        pytest.skip("dpkg-deb is not installed")
    fetcher = AptFetcher("trixie", arch)
    try:
        debs = [fetcher.download(p) for p in COREUTILS]
    except FetchError as exc:
        pytest.skip(f"Debian trixie's coreutils for {arch} could not be had: {exc}")
    root = tmp_path / "root"
    for deb in debs:
        extract(deb, root)
    for d in ("lib", "bin", "sbin"):
        if not (root / d).exists():
            (root / d).symlink_to(f"usr/{d}")
    (root / "tmp").mkdir()

    def run(*argv: str) -> str:
        r = Machine(arch=arch, root=str(root), root_rw=True).load(root / "usr/bin" / argv[0], list(argv[1:])).run()
        assert r.exit_status == 0, (argv, r.message, r.stderr)
        return r.stdout.decode()
    run("mkfifo", "-m", "0640", "/tmp/ff")
    assert run("stat", "-c", "%F %a %s", "/tmp/ff") == "fifo 640 0\n"
    assert run("ls", "-l", "/tmp").splitlines()[1].startswith("prw-r----- 1 0 0 0 ")
    run("rm", "/tmp/ff")
    assert list((root / "tmp").iterdir()) == []
