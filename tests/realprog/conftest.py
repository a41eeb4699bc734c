"""A guest root of real Debian trixie programs for the real-workload tests, built the way the
oracle's kernels are fetched: ``emukern.debian.AptFetcher`` (``apt-get download`` through a
private apt configuration: its own sources list, state and cache directories, never the
system's), each .deb unpacked with ``dpkg-deb -x``.  The root is built once per package set and
kept under emukern's cache (``test-roots/realprog-<arch>-<key>``); without the network and
without that cache, or without dpkg-deb, the tests skip.

What is in it: busybox-static (its shell runs its applets without exec, so qemu-user, which
cannot execve a foreign binary here without binfmt_misc, runs the same pipelines), and sqlite3
with its libraries (the list of tests/kernel/fs/test_sqlite_debian.py, imported from there
rather than copied).  /bin/<applet> links to busybox give emukern's execve the same names."""
from __future__ import annotations

import ast
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from emukern.debian import AptFetcher, FetchError, cache_root

HERE = Path(__file__).resolve().parent
QEMU = {"riscv64": "qemu-riscv64", "arm64": "qemu-aarch64"}
ARCHES = ["arm64", "riscv64"]
APPLETS = ("sh", "seq", "sort", "head", "tail", "tar", "ls", "cat", "echo", "printf", "wc", "touch",
           "date", "sed", "awk", "tr", "cut", "uniq", "expr", "mkdir", "rm", "true", "false",
           "sleep", "stat", "tee", "yes")


def _sqlite_packages() -> tuple[str, ...]:
    """sqlite3's closure as the sqlite test lists it (one list, kept there; read from its source,
    since importing that test module would import its directory's conftest too)."""
    tree = ast.parse((HERE.parent / "kernel" / "fs" / "test_sqlite_debian.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["PACKAGES"]:
            return tuple(ast.literal_eval(node.value))
    raise AssertionError("tests/kernel/fs/test_sqlite_debian.py has no PACKAGES list")


def packages() -> tuple[str, ...]:
    return ("busybox-static", *_sqlite_packages())


def build_root(arch: str) -> Path:
    """The unpacked root for ``arch`` (built once, then read-only by convention: tests that
    write copy it or use their own tmp directories)."""
    if shutil.which("dpkg-deb") is None:
        pytest.skip("dpkg-deb is not installed")
    try:
        fetcher = AptFetcher("trixie", arch)
        debs = [fetcher.download(p) for p in packages()]
    except FetchError as exc:
        pytest.skip(f"Debian trixie {arch} packages could not be had: {exc}")
    key = hashlib.sha256(("\0".join(d.name for d in debs) + "\0" + " ".join(APPLETS)).encode()).hexdigest()[:16]
    root = cache_root() / "test-roots" / f"realprog-{arch}-{key}"
    if (root / ".complete").exists():
        return root
    tmp = root.with_name(f"{root.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for d in debs:
        subprocess.run(["dpkg-deb", "-x", str(d), str(tmp)], check=True)
    for name in ("lib", "bin", "sbin"):                 # merged /usr, as usrmerge makes it
        if not (tmp / name).exists():
            (tmp / name).symlink_to(f"usr/{name}")
    busybox = "/usr/bin/busybox"
    assert (tmp / busybox.lstrip("/")).exists(), "busybox-static did not unpack /usr/bin/busybox"
    for applet in APPLETS:
        link = tmp / "usr" / "bin" / applet
        if not link.exists() and not link.is_symlink():
            link.symlink_to("busybox")
    (tmp / "tmp").mkdir(exist_ok=True)
    (tmp / ".complete").touch()
    try:
        tmp.rename(root)
    except OSError:                                      # a parallel worker finished first
        shutil.rmtree(tmp, ignore_errors=True)
    return root


@pytest.fixture(scope="session")
def debian_root():
    """debian_root(arch) -> the cached guest root (skips when it cannot be built here)."""
    made: dict[str, Path] = {}

    def get(arch: str) -> Path:
        if arch not in made:
            made[arch] = build_root(arch)
        return made[arch]
    return get


def need_qemu(arch: str) -> str:
    q = shutil.which(QEMU[arch])
    if q is None:
        pytest.skip(f"{QEMU[arch]} (qemu-user) is not installed")
    return q


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``linux`` here boot the real kernels, as tests/oracle's do: only with
    EMUKERN_LINUX_TESTS=1 (`EMUKERN_LINUX_TESTS=1 pytest -m linux tests/realprog`)."""
    if os.environ.get("EMUKERN_LINUX_TESTS") == "1":
        return
    skip = pytest.mark.skip(reason="boots real kernels: set EMUKERN_LINUX_TESTS=1")
    for item in items:
        if item.get_closest_marker("linux") is not None and HERE in Path(str(item.path)).parents:
            item.add_marker(skip)
